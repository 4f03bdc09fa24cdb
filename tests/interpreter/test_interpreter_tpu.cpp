// The simulated TPU: DMAs (eager / on_wait), semaphores, deadlocks,
// semaphores left non-zero, races found by vector clocks, core_map.
#include "interp_test_util.h"

using namespace itest;

namespace {

RunOptions opts(int cores, std::optional<uint64_t> seed, RunOptions::Dma dma, bool races) {
  RunOptions o;
  o.cores = cores;
  o.grid_seed = seed;
  o.dma = dma;
  o.detect_races = races;
  return o;
}

}  // namespace

TEST_CASE("race: two cores write one output block because the reduction axis is marked parallel") {
  const char* text = R"(
index_map @rows(%i: i32) -> (i32, i32) {
  return %i, 0
}
index_map @all(%i: i32) -> i32 {
  return 0
}
kernel @k(%x: ref<f32[8,128], vmem>, %o: ref<f32[128], vmem>) {
  %v = get %x[:, :]
  %s = reduce_sum[axes=(0)] %v
  addupdate %o[:], %s
}
func @main(%x: f32[32,128]) -> f32[128] {
  %out = pallas_call[kernel=@k, grid=(4), in_specs=[spec((8, 128), @rows)],
                     out_specs=[spec((128), @all)], out_shapes=[f32[128]],
                     dimension_semantics=(parallel)] %x
  return %out
}
)";
  Array x = random(DType::f32, {32, 128}, 1);
  for (uint64_t seed = 0; seed < 5; ++seed)
    for (auto dma : {RunOptions::Dma::eager, RunOptions::Dma::on_wait}) {
      std::string err = run_error(text, {x}, opts(2, seed, dma, true));
      INFO("seed " << seed);
      CHECK(contains(err, "RACE DETECTED"));
      CHECK(contains(err, "write of any buffer of output \"o\" (device 0, core 0)[0:128] by the copy-out of output \"o\""));
      CHECK(contains(err, "on device 0 (core 1)"));
      CHECK(contains(err, "on device 0 (core 0)"));
    }
  // On one core (or without race detection) the same program runs.
  CHECK(run_error(text, {x}, opts(1, std::nullopt, RunOptions::Dma::on_wait, true)) == "");
}

TEST_CASE("race: reading a DMA's destination before waiting for it") {
  const char* text = R"(
kernel @k(%x: ref<f32[8,128], any>, %o: ref<f32[8,128], vmem>, %buf: ref<f32[8,128], vmem>,
          %sem: ref<dma_sem, semaphore>) {
  dma_start %x[:, :], %buf[:, :], %sem
  %early = get %buf[:, :]
  dma_wait %sem, %buf[:, :]
  %v = get %buf[:, :]
  %s = add %v, %early
  swap %o[:, :], %s
}
func @main(%x: f32[8,128]) -> f32[8,128] {
  %out = pallas_call[kernel=@k, grid=(1), in_specs=[spec(mem=any)], out_specs=[spec()],
                     out_shapes=[f32[8,128]], scratch=[ref<f32[8,128], vmem>, ref<dma_sem, semaphore>]] %x
  return %out
}
)";
  Array x = random(DType::f32, {8, 128}, 2);
  for (uint64_t seed = 0; seed < 3; ++seed)
    for (auto dma : {RunOptions::Dma::eager, RunOptions::Dma::on_wait}) {
      std::string err = run_error(text, {x}, opts(1, seed, dma, true));
      CHECK(contains(err, "RACE DETECTED"));
      CHECK(contains(err, "read of vmem buffer of scratch \"buf\" (device 0, core 0)[0:8, 0:128] by get on device 0 core 0 at test.tsr:5:3"));
      CHECK(contains(err, "write of vmem buffer of scratch \"buf\" (device 0, core 0)[0:8, 0:128] by DMA"));
    }
  // The semantics without race detection: eager copies at dma_start, on_wait at dma_wait.
  Array eager = run(text, {x}, opts(1, std::nullopt, RunOptions::Dma::eager, false))[0];
  Array on_wait = run(text, {x}, opts(1, std::nullopt, RunOptions::Dma::on_wait, false))[0];
  CHECK(eager.get(0) == static_cast<float>(2 * static_cast<float>(x.get(0))));
  CHECK(std::isnan(on_wait.get(0)));  // the early read saw uninitialized memory
}

TEST_CASE("deadlock: a wait nobody signals is reported, naming core and semaphore") {
  const char* text = R"(
kernel @k(%o: ref<f32[8], vmem>, %s: ref<sem[2], semaphore>) {
  %c = program_id[axis=0]
  %other = sub 1, %c
  %me = axis_index[axis_name=dev]
  swap %o[:], 1.0
  semaphore_wait %s[%c], 1
  semaphore_signal %s[%other], 1, %me, %other
}
func @main() -> f32[1,8] {
  %out = pmap[axis_name=dev, axis_size=1, in_axes=(), out_axes=(0), body=fn() -> f32[8] {
    %r = pallas_call[kernel=@k, grid=(2), in_specs=[], out_specs=[spec()], out_shapes=[f32[8]],
                     scratch=[ref<sem[2], semaphore>], dimension_semantics=(parallel)]
    return %r
  }]
  return %out
}
)";
  for (int cores : {1, 2}) {
    std::string err = run_error(text, {}, opts(cores, std::nullopt, RunOptions::Dma::on_wait, false));
    INFO("cores " << cores);
    CHECK(contains(err, "deadlock: every core is waiting and none can proceed:"));
    CHECK(contains(err, "device 0 core 0 waits for semaphore scratch \"s\"[0] to reach 1 (it holds 0) in semaphore_wait at test.tsr:7:3"));
    if (cores == 2) CHECK(contains(err, "device 0 core 1 waits for semaphore scratch \"s\"[1] to reach 1"));
  }
}

TEST_CASE("semaphores: cross-core signal and wait; a semaphore left non-zero is an error naming it") {
  const char* text = R"(
kernel @k(%o: ref<f32[8], vmem>, %s: ref<sem[2], semaphore>) {
  %c = program_id[axis=0]
  %other = sub 1, %c
  %me = axis_index[axis_name=dev]
  swap %o[:], 1.0
  semaphore_signal %s[%other], 1, %me, %other
  semaphore_wait %s[%c], 1
  %v = semaphore_read %s[%c]
  %vf = convert_element_type[new_dtype=f32] %v
  swap %o[0], %vf
}
index_map @own(%i: i32) -> i32 {
  return %i
}
func @main() -> f32[1,16] {
  %out = pmap[axis_name=dev, axis_size=1, in_axes=(), out_axes=(0), body=fn() -> f32[16] {
    %r = pallas_call[kernel=@k, grid=(2), in_specs=[], out_specs=[spec((8), @own)], out_shapes=[f32[16]],
                     scratch=[ref<sem[2], semaphore>], dimension_semantics=(parallel)]
    return %r
  }]
  return %out
}
)";
  // Two cores hand each other a token; both end at zero. (In grid order,
  // program i runs on core i; a shuffled grid would break that assumption.)
  for (bool races : {false, true}) CHECK(run_error(text, {}, opts(2, std::nullopt, RunOptions::Dma::on_wait, races)) == "");
  const char* leak = R"(
kernel @k(%o: ref<f32[8], vmem>, %s: ref<sem, semaphore>) {
  semaphore_signal %s, 3
  swap %o[:], 1.0
}
func @main() -> f32[8] {
  %out = pallas_call[kernel=@k, grid=(1), in_specs=[], out_specs=[spec()], out_shapes=[f32[8]],
                     scratch=[ref<sem, semaphore>]]
  return %out
}
)";
  CHECK(contains(run_error(leak, {}), "Semaphore scratch \"s\" has non-zero count 3 for device 0 (global core 0) at kernel exit (kernel @k)"));
}

TEST_CASE("DMA byte counting: a wait for more bytes than were sent deadlocks") {
  const char* text = R"(
kernel @k(%x: ref<f32[8,128], any>, %o: ref<f32[8,128], vmem>, %sem: ref<dma_sem, semaphore>) {
  dma_start %x[0:4, :], %o[0:4, :], %sem
  dma_wait %sem, %o[:, :]
}
func @main(%x: f32[8,128]) -> f32[8,128] {
  %out = pallas_call[kernel=@k, grid=(1), in_specs=[spec(mem=any)], out_specs=[spec()],
                     out_shapes=[f32[8,128]], scratch=[ref<dma_sem, semaphore>]] %x
  return %out
}
)";
  for (auto dma : {RunOptions::Dma::eager, RunOptions::Dma::on_wait})
    CHECK(contains(run_error(text, {Array(DType::f32, {8, 128})}, opts(1, std::nullopt, dma, false)),
                   "waits for semaphore scratch \"sem\" to reach 4096 (it holds 2048)"));
}

TEST_CASE("core_map runs the body once per core with axis_index") {
  const char* text = R"(
func @main(%r: ref<f32[4,2], vmem>) -> f32[4,2] {
  core_map[body=fn(%rr: ref<f32[4,2], vmem>) {
    %c = axis_index[axis_name=core]
    %cf = convert_element_type[new_dtype=f32] %c
    swap %rr[%c, :], %cf
  }, mesh_axes=(core), mesh_shape=(4)] %r
  %v = get %r[:, :]
  return %v
}
)";
  Array out = run(text, {Array(DType::f32, {4, 2})})[0];
  check_close(out, {0, 0, 1, 1, 2, 2, 3, 3}, 0);
}

TEST_CASE("get_barrier_semaphore needs a collective_id") {
  const char* text = R"(
kernel @k(%o: ref<f32[8], vmem>) {
  %b = get_barrier_semaphore
  swap %o[:], 1.0
}
func @main() -> f32[8] {
  %out = pallas_call[kernel=@k, grid=(1), in_specs=[], out_specs=[spec()], out_shapes=[f32[8]]]
  return %out
}
)";
  Module m = parse_module(text, "test.tsr");
  try {
    run_function(m, "main", {});
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(contains(e.formatted(), "get_barrier_semaphore: needs a pallas_call with a collective_id"));
  }
}

TEST_CASE("nested pmaps: every device runs the kernel; device ids flatten the mesh; barriers span it") {
  const char* text = R"(
kernel @k(%x: ref<f32[4], vmem>, %o: ref<f32[4], vmem>) {
  %d = device_id
  %a = axis_index[axis_name=row]
  %b = axis_index[axis_name=col]
  %df = convert_element_type[new_dtype=f32] %d
  %af = convert_element_type[new_dtype=f32] %a
  %bf = convert_element_type[new_dtype=f32] %b
  %v = get %x[:]
  %s1 = mul %df, 100.0
  %s2 = mul %af, 10.0
  %t = add %s1, %s2
  %t2 = add %t, %bf
  %w = add %v, %t2
  swap %o[:], %w
}
func @main(%x: f32[2,3,4]) -> f32[2,3,4] {
  %out = pmap[axis_name=row, axis_size=2, in_axes=(0), out_axes=(0), body=fn(%xr: f32[3,4]) -> f32[3,4] {
    %inner = pmap[axis_name=col, axis_size=3, in_axes=(0), out_axes=(0), body=fn(%xc: f32[4]) -> f32[4] {
      %r = pallas_call[kernel=@k, grid=(1), in_specs=[spec()], out_specs=[spec()], out_shapes=[f32[4]]] %xc
      return %r
    }] %xr
    return %inner
  }] %x
  return %out
}
)";
  Array x = random(DType::f32, {2, 3, 4}, 9);
  std::vector<double> want;
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 3; ++b)
      for (int e = 0; e < 4; ++e)
        want.push_back(static_cast<float>(x.get((a * 3 + b) * 4 + e)) + static_cast<float>((a * 3 + b) * 100 + a * 10 + b));
  for (int cores : {1, 2}) check_close(run(text, {x}, opts(cores, 1, RunOptions::Dma::on_wait, true))[0], want, 0);
}

TEST_CASE("a DMA nobody waits for is reported at kernel exit in both DMA modes") {
  // dma_pipeline without its last wait on the output semaphore: the final
  // chunk's copy is started but never waited on.
  std::string text = example_text("dma_pipeline.tsr");
  const std::string last_wait = "  dma_wait %out_sem[1], %out_buf[1, :, :]\n";
  REQUIRE(text.find(last_wait) != std::string::npos);
  text.erase(text.find(last_wait), last_wait.size());
  Array x = random(DType::f32, {2048, 128}, 3);
  for (auto dma : {RunOptions::Dma::on_wait, RunOptions::Dma::eager}) {
    RunOptions o;
    o.dma = dma;
    std::string e = run_error(text, {x}, o);
    CAPTURE(e);
    CHECK(contains(e, "Semaphore scratch \"out_sem\"[1] has non-zero count 65536"));
    CHECK(contains(e, "every signal (and DMA) must be matched by a wait"));
  }
}

TEST_CASE("a race between DMAs names each access once, with its location") {
  const char* text = R"(
index_map @z(%i: i32) -> (i32, i32) {
  return 0, 0
}
kernel @k(%x: ref<f32[8,128], any>, %o: ref<f32[8,128], any>, %s: ref<dma_sem[1], semaphore>) {
  dma_start %x[:, :], %o[:, :], %s[0]
  dma_wait %s[0], %o[:, :]
}
func @main(%x: f32[8,128]) -> f32[8,128] {
  %out = pallas_call[kernel=@k, grid=(2), in_specs=[spec((8, 128), @z, mem=any)], out_specs=[spec((8, 128), @z, mem=any)],
                     out_shapes=[f32[8,128]], scratch=[ref<dma_sem[1], semaphore>], dimension_semantics=(parallel)] %x
  return %out
}
)";
  RunOptions o;
  o.cores = 2;
  o.detect_races = true;
  std::string e = run_error(text, {random(DType::f32, {8, 128}, 1)}, o);
  CAPTURE(e);
  CHECK(contains(e, "RACE DETECTED"));
  CHECK(contains(e, "of dma_start on device 0 core 1 at test.tsr:6:3"));
  CHECK_FALSE(contains(e, "at test.tsr:6:3 on device"));
}

// The kernel synchronizes the two devices through its
// barrier semaphore. Called twice, the faster device enters the second call
// and signals its neighbour's barrier semaphore while the neighbour is still
// leaving the first call: the semaphore check at kernel exit must come before
// the finish barrier, or it counts that signal as left over.
TEST_CASE("a kernel with a collective_id can be called twice in a pmap") {
  const char* text = R"(
kernel @k(%x: ref<f32[8,128], vmem>, %o: ref<f32[8,128], vmem>) {
  %me = axis_index[axis_name=dev]
  %me1 = add %me, 1
  %other = rem %me1, 2
  %b = get_barrier_semaphore
  semaphore_signal %b, 1, %other
  semaphore_wait %b, 1
  %a = get %x[:, :]
  %a2 = add %a, 1.0:f32
  swap %o[:, :], %a2
}
func @main(%x: f32[2,8,128]) -> f32[2,8,128] {
  %out = pmap[axis_name=dev, axis_size=2, in_axes=(0), out_axes=(0),
              body=fn(%xs: f32[8,128]) -> f32[8,128] {
                %r = pallas_call[kernel=@k, grid=(1), in_specs=[spec()], out_specs=[spec()],
                                 out_shapes=[f32[8,128]], collective_id=0] %xs
                %r2 = pallas_call[kernel=@k, grid=(1), in_specs=[spec()], out_specs=[spec()],
                                  out_shapes=[f32[8,128]], collective_id=0] %r
                return %r2
              }] %x
  return %out
}
)";
  Array x = random(DType::f32, {2, 8, 128}, 4);
  std::vector<double> want;
  for (int64_t i = 0; i < x.size(); ++i) want.push_back(static_cast<float>(static_cast<float>(x.get(i)) + 1.0f) + 1.0f);
  for (uint64_t seed = 0; seed < 6; ++seed)
    for (bool races : {false, true}) {
      INFO("seed " << seed << " races " << races);
      check_close(run(text, {x}, opts(1, seed, RunOptions::Dma::on_wait, races))[0], want, 0);
    }
}

// Each core of a core_map copies its half of an HBM
// buffer with a DMA and waits for it; after the core_map, the function DMAs
// the whole destination into VMEM. The core_map's end orders every core (and
// the DMAs it waited for) before that read: no race. Likewise for plain
// writes by the cores (and a read by the caller before the core_map).
TEST_CASE("race detection: core_map forks and joins its cores' clocks") {
  const char* dma = R"(
func @main(%x: ref<f32[16,128], any>, %y: ref<f32[16,128], any>) -> f32[16,128] {
  core_map[mesh_axes=(c), mesh_shape=(2), body=fn(%s: ref<f32[16,128], any>, %d: ref<f32[16,128], any>) {
    run_scoped[body=fn(%s2: ref<f32[16,128], any>, %d2: ref<f32[16,128], any>, %sem: ref<dma_sem, semaphore>) {
      %c = axis_index[axis_name=c]
      %row = mul %c, 8
      dma_start %s2[ds(%row, 8), :], %d2[ds(%row, 8), :], %sem
      dma_wait %sem, %d2[ds(%row, 8), :]
    }] %s, %d
  }] %x, %y
  %v = run_scoped[body=fn(%yy: ref<f32[16,128], any>, %buf: ref<f32[16,128], vmem>, %sem: ref<dma_sem, semaphore>) -> f32[16,128] {
    dma_start %yy[:, :], %buf[:, :], %sem
    dma_wait %sem, %buf[:, :]
    %r = get %buf[:, :]
    return %r
  }] %y
  return %v
}
)";
  const char* writes = R"(
func @main(%r: ref<f32[4,2], vmem>) -> f32[4,2] {
  %before = get %r[:, :]
  core_map[body=fn(%rr: ref<f32[4,2], vmem>) {
    %c = axis_index[axis_name=core]
    %cf = convert_element_type[new_dtype=f32] %c
    swap %rr[%c, :], %cf
  }, mesh_axes=(core), mesh_shape=(4)] %r
  %v = get %r[:, :]
  return %v
}
)";
  Array x = random(DType::f32, {16, 128}, 2);
  for (auto mode : {RunOptions::Dma::on_wait, RunOptions::Dma::eager})
    for (uint64_t seed = 0; seed < 3; ++seed) {
      INFO("seed " << seed);
      check_close(run(dma, {x, Array(DType::f32, {16, 128})}, opts(1, seed, mode, true))[0], values(x), 0);
      check_close(run(writes, {Array(DType::f32, {4, 2})}, opts(1, seed, mode, true))[0], {0, 0, 1, 1, 2, 2, 3, 3}, 0);
    }
}

// Device 0 signals device 1 and then waits forever, inside
// its kernel; device 1 takes the signal and reads out of bounds. The error is
// device 1's: the root thread (device 0), which rethrows it, must not append
// its own kernel frame, which named a second, contradictory device.
TEST_CASE("an error on one device of a pmap names that device only") {
  const char* text = R"(
kernel @k(%x: ref<f32[8], vmem>, %o: ref<f32[8], vmem>, %s: ref<sem, semaphore>) {
  %d = axis_index[axis_name=dev]
  cond[branches=[fn(%xx: ref<f32[8], vmem>, %ss: ref<sem, semaphore>, %dd: i32) {
    semaphore_signal %ss, 1, 1
    semaphore_wait %ss, 1
  }, fn(%xx: ref<f32[8], vmem>, %ss: ref<sem, semaphore>, %dd: i32) {
    semaphore_wait %ss, 1
    %a = get %xx[ds(%dd, 8)]
  }]] %d, %x, %s, %d
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
  for (int cores : {1, 2}) {
    std::string e = run_error(text, {random(DType::f32, {2, 8}, 1)}, opts(cores, std::nullopt, RunOptions::Dma::on_wait, false));
    CAPTURE(e);
    CHECK(contains(e, "test.tsr:9:5: error: get: Out-of-bounds read of vmem buffer of input \"x\" block (device 1, core 0)"));
    CHECK(contains(e, "(in kernel @k in iteration (0,) on device 1 (core 0))"));
    CHECK_FALSE(contains(e, "device 0"));
  }
}

// ---- DMA with a dynamic size: `ds(0, %n)` (Pallas's `pl.ds(0, n)` with a traced n) ----
namespace {

// Copies the first n rows of x (n from scalar prefetch) into a zeroed output:
// the region, the byte count and the wait all use the run-time n.
const char* kFirstRows = R"(
kernel @k(%n_ref: ref<i32[1], smem>, %x: ref<f32[16,128], any>, %o: ref<f32[16,128], vmem>,
          %sem: ref<dma_sem, semaphore>) {
  %n = get %n_ref[0]
  swap %o[:, :], 0.0
  dma_start %x[ds(0, %n), :], %o[ds(0, %n), :], %sem
  dma_wait %sem, %o[ds(0, %n), :]
}
func @main(%n: i32[1], %x: f32[16,128]) -> f32[16,128] {
  %out = pallas_call[kernel=@k, grid=(1), num_scalar_prefetch=1, in_specs=[spec(mem=any)], out_specs=[spec()],
                     out_shapes=[f32[16,128]], scratch=[ref<dma_sem, semaphore>]] %n, %x
  return %out
}
)";

Array scalar_n(int64_t n) {
  Array a(DType::i32, {1});
  a.set(0, static_cast<double>(n));
  return a;
}

}  // namespace

TEST_CASE("DMA with a dynamic size copies the first n rows; the semaphore counts the bytes copied") {
  Array x = random(DType::f32, {16, 128}, 7);
  for (int64_t n : {0, 1, 5, 15, 16})
    for (auto dma : {RunOptions::Dma::eager, RunOptions::Dma::on_wait}) {
      INFO("n " << n);
      std::vector<Array> out = run(kFirstRows, {scalar_n(n), x}, opts(1, std::nullopt, dma, true));
      REQUIRE(out.size() == 1);
      // The naive reference: rows below n copied, the rest zero.
      for (int64_t i = 0; i < 16; ++i)
        for (int64_t j = 0; j < 128; ++j) CHECK(out[0].get(i * 128 + j) == (i < n ? x.get(i * 128 + j) : 0.0));
    }
  // The wait names the bytes of its own region: the whole buffer is more than 5 rows sent.
  std::string whole = kFirstRows;
  whole.replace(whole.find("dma_wait %sem, %o[ds(0, %n), :]"), 31, "dma_wait %sem, %o[:, :]        ");
  CHECK(contains(run_error(whole, {scalar_n(5), x}), "waits for semaphore scratch \"sem\" to reach 8192 (it holds 2560)"));
}

TEST_CASE("DMA with a dynamic size: a size past the Ref or negative is a located run-time error") {
  Array x = random(DType::f32, {16, 128}, 8);
  for (auto oob : {RunOptions::Oob::raise, RunOptions::Oob::uninitialized})
    for (auto dma : {RunOptions::Dma::eager, RunOptions::Dma::on_wait}) {
      RunOptions o = opts(1, std::nullopt, dma, false);
      o.oob = oob;
      std::string err = run_error(kFirstRows, {scalar_n(17), x}, o);
      // --oob uninitialized lets the source read past the end; the write never may.
      CHECK(contains(err, oob == RunOptions::Oob::raise ? "dma_start: Out-of-bounds read of" : "dma_start: Out-of-bounds write of"));
      CHECK(contains(err, "[0:17, 0:128] but buffer has shape (16, 128)"));
      CHECK(contains(err, "test.tsr:6:3"));
      CHECK(contains(err, "(in kernel @k in iteration (0,))"));
      std::string neg = run_error(kFirstRows, {scalar_n(-1), x}, o);
      CHECK(contains(neg, "test.tsr:6:3: error: dma_start: dynamic slice size -1 in dimension 0 of"));
      CHECK(contains(neg, "is negative (in kernel @k in iteration (0,))"));
    }
}

TEST_CASE("race: reading rows of a DMA destination before the wait races only when the dynamic size reaches them") {
  const char* text = R"(
kernel @k(%n_ref: ref<i32[1], smem>, %x: ref<f32[16,128], any>, %o: ref<f32[16,128], vmem>,
          %buf: ref<f32[16,128], vmem>, %sem: ref<dma_sem, semaphore>) {
  %n = get %n_ref[0]
  swap %buf[:, :], 0.0
  dma_start %x[ds(0, %n), :], %buf[ds(0, %n), :], %sem
  %early = get %buf[8:16, :]
  dma_wait %sem, %buf[ds(0, %n), :]
  swap %o[8:16, :], %early
}
func @main(%n: i32[1], %x: f32[16,128]) -> f32[16,128] {
  %out = pallas_call[kernel=@k, grid=(1), num_scalar_prefetch=1, in_specs=[spec(mem=any)], out_specs=[spec()],
                     out_shapes=[f32[16,128]], scratch=[ref<f32[16,128], vmem>, ref<dma_sem, semaphore>]] %n, %x
  return %out
}
)";
  Array x = random(DType::f32, {16, 128}, 9);
  for (auto dma : {RunOptions::Dma::eager, RunOptions::Dma::on_wait}) {
    CHECK(run_error(text, {scalar_n(8), x}, opts(1, 0, dma, true)) == "");
    std::string err = run_error(text, {scalar_n(9), x}, opts(1, 0, dma, true));
    CHECK(contains(err, "RACE DETECTED"));
    CHECK(contains(err, "write of vmem buffer of scratch \"buf\" (device 0, core 0)[0:9, 0:128] by DMA"));
  }
}
