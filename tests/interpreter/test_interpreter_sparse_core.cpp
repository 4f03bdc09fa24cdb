// SparseCore in the interpreter: gather / scatter / scatter-add DMAs (rows by
// offsets), their out-of-range offsets, semaphore byte counts and races, and
// the SparseCore restrictions checked before a kernel runs.
#include <cmath>

#include "interp_test_util.h"

using namespace itest;

namespace {

// One grid step moves 4 rows: offsets `%idx` (a VMEM block of the ids), an
// HBM table `%t`, VMEM rows `%rows`. `body` is the kernel's inner part.
std::string gather_module(const std::string& body) {
  return "kernel @k(%idx: ref<i32[4], vmem>, %t: ref<f32[8,16], any>, %o: ref<f32[4,16], vmem>) {\n"
         "  run_scoped[body=fn(%i: ref<i32[4], vmem>, %tt: ref<f32[8,16], any>, %rows: ref<f32[4,16], vmem>,\n"
         "                     %sem: ref<dma_sem, semaphore>) {\n" +
         body +
         "  }] %idx, %t, %o\n"
         "}\n"
         "func @main(%idx: i32[4], %t: f32[8,16]) -> f32[4,16] {\n"
         "  %out = pallas_call[kernel=@k, grid=(1), kernel_type=sc_vector_subcore,\n"
         "                     in_specs=[spec(), spec(mem=any)], out_specs=[spec()], out_shapes=[f32[4,16]]] %idx, %t\n"
         "  return %out\n"
         "}\n";
}

const std::string kGather =
    "    dma_start %tt[%i, :], %rows[:, :], %sem\n"
    "    dma_wait %sem, %rows[:, :]\n";

// Scatter (add=ADD) of the 4 rows of `%upd` into rows idx of the aliased `%acc`.
std::string scatter_module(bool add) {
  return std::string("kernel @k(%idx: ref<i32[4], vmem>, %upd: ref<f32[4,16], vmem>, %acc: ref<f32[8,16], any>,\n"
                     "          %o: ref<f32[8,16], any>) {\n"
                     "  run_scoped[body=fn(%i: ref<i32[4], vmem>, %u: ref<f32[4,16], vmem>, %oo: ref<f32[8,16], any>,\n"
                     "                     %sem: ref<dma_sem, semaphore>) {\n") +
         "    dma_start" + (add ? "[add=true]" : "") + " %u[:, :], %oo[%i, :], %sem\n" +
         "    dma_wait %sem, %u[:, :]\n"
         "  }] %idx, %upd, %o\n"
         "}\n"
         "func @main(%idx: i32[4], %upd: f32[4,16], %acc: f32[8,16]) -> f32[8,16] {\n"
         "  %out = pallas_call[kernel=@k, grid=(1), kernel_type=sc_vector_subcore, input_output_aliases=[(2, 0)],\n"
         "                     in_specs=[spec(), spec(), spec(mem=any)], out_specs=[spec(mem=any)],\n"
         "                     out_shapes=[f32[8,16]]] %idx, %upd, %acc\n"
         "  return %out\n"
         "}\n";
}

Array ids(std::vector<double> v) { return Array::from_values(DType::i32, {static_cast<int64_t>(v.size())}, v); }

RunOptions with(RunOptions::Dma dma, bool races = false) {
  RunOptions o;
  o.dma = dma;
  o.detect_races = races;
  return o;
}

}  // namespace

TEST_CASE("sparse core: a gather copies row idx[i] of the table into row i, in both DMA modes") {
  Array t = iota(DType::f32, {8, 16});
  for (auto dma : {RunOptions::Dma::on_wait, RunOptions::Dma::eager}) {
    std::vector<Array> out = run(gather_module(kGather), {ids({5, 0, 5, 7}), t}, with(dma, true));
    std::vector<double> want;
    for (int row : {5, 0, 5, 7})
      for (int c = 0; c < 16; ++c) want.push_back(row * 16 + c);
    check_close(out[0], want, 0);
  }
}

TEST_CASE("sparse core: a scatter writes row i into row idx[i]; a scatter-add accumulates repeats") {
  Array upd = iota(DType::f32, {4, 16}), acc = Array::from_values(DType::f32, {8, 16}, std::vector<double>(128, 1000));
  std::vector<double> idx{6, 1, 6, 3};
  std::vector<double> plain(128, 1000), added(128, 1000);
  for (int i = 0; i < 4; ++i)
    for (int c = 0; c < 16; ++c) {
      plain[static_cast<int>(idx[i]) * 16 + c] = i * 16 + c;  // the later of two repeats wins
      added[static_cast<int>(idx[i]) * 16 + c] += i * 16 + c;
    }
  check_close(run(scatter_module(false), {ids(idx), upd, acc})[0], plain, 0);
  check_close(run(scatter_module(true), {ids(idx), upd, acc}, with(RunOptions::Dma::eager, true))[0], added, 0);
}

TEST_CASE("sparse core: an offset outside the table is an error naming the buffer, the kernel and the grid point") {
  Array t = iota(DType::f32, {8, 16});
  std::string err = run_error(gather_module(kGather), {ids({1, 8, 2, 3}), t});
  CHECK_HAS(err, "test.tsr:4:5: error: dma_start: Out-of-bounds read of any buffer of input \"t\" (device 0, core 0): "
                 "offset 8 (element 1 of the offsets in vmem buffer of input \"idx\" block");
  CHECK_HAS(err, "is not a row of shape (8, 16)");
  CHECK_HAS(err, "(in kernel @k");
  // --oob uninitialized: that row reads as uninitialized memory (NaN), the others as usual.
  RunOptions o;
  o.oob = RunOptions::Oob::uninitialized;
  Array out = run(gather_module(kGather), {ids({1, -1, 2, 3}), t}, o)[0];
  CHECK(out.get(0) == 16);
  CHECK(std::isnan(out.get(16)));
  CHECK(out.get(32) == 32);
  // A scatter's destination row must exist whatever --oob says.
  Array upd = iota(DType::f32, {4, 16}), acc = iota(DType::f32, {8, 16});
  CHECK_HAS(run_error(scatter_module(true), {ids({0, 1, 9, 2}), upd, acc}, o),
            "dma_start: Out-of-bounds write of any buffer of input \"acc\" (device 0, core 0): offset 9 (element 2 of the offsets");
}

TEST_CASE("sparse core: the semaphore receives the bytes of the rows moved") {
  // Waiting for 2 of the 4 rows leaves 2 rows' bytes on the semaphore at exit.
  std::string half = "    dma_start %tt[%i, :], %rows[:, :], %sem\n"
                     "    dma_wait %sem, %rows[0:2, :]\n";
  CHECK_HAS(run_error(gather_module(half), {ids({0, 1, 2, 3}), iota(DType::f32, {8, 16})}),
            "has non-zero count 128 for device 0 (global core 0) at kernel exit");  // 2 rows x 16 x 4 bytes
}

TEST_CASE("sparse core: reading the gathered rows before the wait is a race; after it is not") {
  std::string early = "    dma_start %tt[%i, :], %rows[:, :], %sem\n"
                      "    %v = get %rows[0, :]\n"
                      "    dma_wait %sem, %rows[:, :]\n";
  Array t = iota(DType::f32, {8, 16});
  CHECK_HAS(run_error(gather_module(early), {ids({0, 1, 2, 3}), t}, with(RunOptions::Dma::eager, true)), "RACE DETECTED");
  CHECK(run_error(gather_module(kGather), {ids({0, 1, 2, 3}), t}, with(RunOptions::Dma::eager, true)).empty());
}

TEST_CASE("sparse core: an unverified kernel that breaks a SparseCore rule stops before it runs") {
  Module m = parse_module(
      "index_map @m(%i: i32) -> i32 { return %i }\n"
      "kernel @k(%x: ref<f32[16], vmem>, %o: ref<f32[16], vmem>) {\n"
      "  %v = get %x[0:8]\n"
      "  swap %o[0:8], %v\n"
      "}\n"
      "func @main(%x: f32[32]) -> f32[32] {\n"
      "  %out = pallas_call[kernel=@k, grid=(2), kernel_type=sc_vector_subcore,\n"
      "                     in_specs=[spec((16), @m)], out_specs=[spec((16), @m)], out_shapes=[f32[32]]] %x\n"
      "  return %out\n"
      "}\n",
      "test.tsr");
  std::string err;
  try {
    run_function(m, "main", {iota(DType::f32, {32})}, {});
  } catch (const Error& e) {
    err = e.formatted();
  }
  CHECK(err == "test.tsr:3:3: error: get only supports f32 arrays of shapes [(16,)], got (8,)");
}

TEST_CASE("sparse core: scatters from two cores race only when their rows overlap") {
  // Two parallel grid steps on two cores, each scattering its 4 rows (its
  // block of the offsets) into one shared HBM output, with no ordering.
  const std::string text =
      "index_map @m(%i: i32) -> (i32, i32) { return %i, 0 }\n"
      "index_map @v(%i: i32) -> i32 { return %i }\n"
      "kernel @k(%idx: ref<i32[4], vmem>, %upd: ref<f32[4,16], vmem>, %acc: ref<f32[8,16], any>,\n"
      "          %o: ref<f32[8,16], any>) {\n"
      "  run_scoped[body=fn(%i: ref<i32[4], vmem>, %u: ref<f32[4,16], vmem>, %oo: ref<f32[8,16], any>,\n"
      "                     %sem: ref<dma_sem, semaphore>) {\n"
      "    dma_start %u[:, :], %oo[%i, :], %sem\n"
      "    dma_wait %sem, %u[:, :]\n"
      "  }] %idx, %upd, %o\n"
      "}\n"
      "func @main(%idx: i32[8], %upd: f32[8,16], %acc: f32[8,16]) -> f32[8,16] {\n"
      "  %out = pallas_call[kernel=@k, grid=(2), kernel_type=sc_vector_subcore, input_output_aliases=[(2, 0)],\n"
      "                     dimension_semantics=(parallel),\n"
      "                     in_specs=[spec((4), @v), spec((4, 16), @m), spec(mem=any)], out_specs=[spec(mem=any)],\n"
      "                     out_shapes=[f32[8,16]]] %idx, %upd, %acc\n"
      "  return %out\n"
      "}\n";
  RunOptions o = with(RunOptions::Dma::on_wait, true);
  o.cores = 2;
  Array upd = iota(DType::f32, {8, 16}), acc = iota(DType::f32, {8, 16});
  // Disjoint rows (a permutation): no race, every row written once.
  std::vector<Array> out = run(text, {ids({7, 0, 5, 2, 1, 6, 3, 4}), upd, acc}, o);
  CHECK(out[0].get(7 * 16) == 0);
  CHECK(out[0].get(4 * 16 + 3) == 7 * 16 + 3);
  // Row 5 written by both cores: the race detector names the row.
  CHECK_HAS(run_error(text, {ids({7, 0, 5, 2, 1, 5, 3, 4}), upd, acc}, o), "RACE DETECTED");
  CHECK_HAS(run_error(text, {ids({7, 0, 5, 2, 1, 5, 3, 4}), upd, acc}, o), "[5:6, 0:16] by DMA 1");
}

