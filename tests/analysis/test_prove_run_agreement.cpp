// Kernels that `prove` once proved and `run` then failed: per-device scalar
// prefetch and grid sizes under pmap, a pmap of one device, remote targets
// outside the devices, a dma_wait naming another region than its copy, and
// a masked read of a bounded block's tail. Each test checks the verdict and
// that the interpreter agrees: proved runs clean (on 1 and 2 cores, shuffled
// grids), FAILED fails or changes the output from run to run.
#include <doctest/doctest.h>

#include <cmath>
#include <optional>

#include "protocol_test_util.h"

using namespace tessera;
using namespace tessera::prove;
using namespace tessera::prove::testing;

namespace {

interp::Array ints(const Shape& shape, const std::vector<double>& v) { return interp::Array::from_values(DType::i32, shape, v); }

interp::Array ramp(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<double> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i % 97) + 1;
  return interp::Array::from_values(DType::f32, shape, v);
}

// The first output of @main on `cores` cores, in the order of `seed` (none: the interpreter's).
std::vector<double> output(const std::string& text, const std::vector<interp::Array>& inputs, int cores,
                           std::optional<uint64_t> seed, interp::RunOptions::Dma dma = interp::RunOptions::Dma::on_wait) {
  interp::RunOptions opts;
  opts.cores = cores;
  opts.grid_seed = seed;
  opts.dma = dma;
  std::vector<interp::Array> out = interp::run_function(parse_verified(text), "main", inputs, opts);
  std::vector<double> v;
  for (int64_t i = 0; i < out.at(0).size(); ++i) v.push_back(out[0].get(i));
  return v;
}

// Whether some core count, grid order or DMA mode changes the output (NaNs compare equal).
bool output_varies(const std::string& text, const std::vector<interp::Array>& inputs) {
  std::vector<double> first = output(text, inputs, 1, std::nullopt);
  for (auto dma : {interp::RunOptions::Dma::on_wait, interp::RunOptions::Dma::eager})
    for (int cores : {1, 2})
      for (uint64_t seed : {1, 2, 3}) {
        std::vector<double> v = output(text, inputs, cores, seed, dma);
        for (size_t i = 0; i < v.size(); ++i)
          if (v[i] != first[i] && !(std::isnan(v[i]) && std::isnan(first[i]))) return true;
      }
  return false;
}

Obligation carried(const std::string& text) { return find(prove_text(text), "kernel", "carried state"); }

// Each device signals the other and waits for its signal, when its flag (scalar prefetch) is set.
const std::string kFlag = R"(
kernel @k(%flag: ref<i32[1], smem>, %x: ref<f32[8], vmem>, %o: ref<f32[8], vmem>, %s: ref<sem, semaphore>) {
  %f = get %flag[0]
  %d = axis_index[axis_name=dev]
  %other = sub 1, %d
  %on = ne %f, 0
  cond[branches=[fn(%s0: ref<sem, semaphore>, %t0: i32) { }, fn(%s1: ref<sem, semaphore>, %t1: i32) {
    semaphore_signal %s1, 1, %t1
    semaphore_wait %s1, 1
  }]] %on, %s, %other
  %a = get %x[:]
  swap %o[:], %a
}
func @main(%flags: i32[2,1], %x: f32[2,8]) -> f32[2,8] {
  %out = pmap[axis_name=dev, axis_size=2, in_axes=(0, 0), out_axes=(0), body=fn(%fl: i32[1], %xs: f32[8]) -> f32[8] {
    %r = pallas_call[kernel=@k, grid=(1), num_scalar_prefetch=1, in_specs=[spec()], out_specs=[spec()], out_shapes=[f32[8]],
                     scratch=[ref<sem, semaphore>]] %fl, %xs
    return %r
  }] %flags, %x
  return %out
}
)";

}  // namespace

TEST_CASE("scalar prefetch split over a pmap axis is per device: a flag guarding a signal") {
  interp::Array x = zeros(DType::f32, {2, 8});
  Obligation o = balance(kFlag);
  CHECK_MESSAGE(o.verdict == Verdict::failed, o.line());
  CHECK(has(o.detail, "fl[0] = 1 on dev "));
  CHECK(has(run_error(kFlag, {ints({2, 1}, {1, 0}), x}), "deadlock"));
  CHECK(run_error(kFlag, {ints({2, 1}, {1, 1}), x}) == "");
  // The same flag broadcast to every device (in_axes none): proved, and it runs with either value.
  std::string shared = replace_once(kFlag, "in_axes=(0, 0)", "in_axes=(none, 0)");
  shared = replace_once(shared, "%flags: i32[2,1]", "%flags: i32[1]");
  Obligation p = balance(shared);
  CHECK_MESSAGE(p.verdict == Verdict::proved, p.line());
  for (double f : {0.0, 1.0}) check_runs_in_orders(shared, {ints({1}, {f}), x});
}

TEST_CASE("scalar prefetch computed from axis_index in the pmap body is per device: a signal amount") {
  // Device d signals its right neighbour d + 1 (mod 3) and waits: with amount d, the amounts differ.
  const std::string text = R"(
kernel @k(%amt: ref<i32[1], smem>, %x: ref<f32[8], vmem>, %o: ref<f32[8], vmem>, %s: ref<sem, semaphore>) {
  %n = get %amt[0]
  %d = axis_index[axis_name=dev]
  %d1 = add %d, 1
  %other = rem %d1, 3
  semaphore_signal %s, %n, %other
  semaphore_wait %s, %n
  %a = get %x[:]
  swap %o[:], %a
}
func @main(%x: f32[3,8]) -> f32[3,8] {
  %out = pmap[axis_name=dev, axis_size=3, in_axes=(0), out_axes=(0), body=fn(%xs: f32[8]) -> f32[8] {
    %d = axis_index[axis_name=dev]
    %am = broadcast_in_dim[shape=(1), broadcast_dimensions=()] %d
    %r = pallas_call[kernel=@k, grid=(1), num_scalar_prefetch=1, in_specs=[spec()], out_specs=[spec()], out_shapes=[f32[8]],
                     scratch=[ref<sem, semaphore>]] %am, %xs
    return %r
  }] %x
  return %out
}
)";
  interp::Array x = zeros(DType::f32, {3, 8});
  Obligation o = balance(text);
  CHECK_MESSAGE(o.verdict != Verdict::proved, o.line());
  CHECK(has(run_error(text, {x}), "non-zero count"));
  // Amounts computed from literals are the same on every device: proved, and the run agrees.
  std::string same = replace_once(text, "%am = broadcast_in_dim[shape=(1), broadcast_dimensions=()] %d",
                                  "%two = add 1:i32, 1:i32\n    %am = broadcast_in_dim[shape=(1), broadcast_dimensions=()] %two");
  Obligation p = balance(same);
  CHECK_MESSAGE(p.verdict == Verdict::proved, p.line());
  CHECK(run_error(same, {x}) == "");
}

TEST_CASE("a dynamic grid size computed on each device: the devices may run different grids") {
  const std::string text = R"(
kernel @k(%x: ref<f32[8], vmem>, %o: ref<f32[8], vmem>, %s: ref<sem, semaphore>) {
  %d = axis_index[axis_name=dev]
  %other = sub 1, %d
  semaphore_signal %s, 1, %other
  semaphore_wait %s, 1
  %a = get %x[:]
  swap %o[:], %a
}
func @main(%x: f32[2,8]) -> f32[2,8] {
  %out = pmap[axis_name=dev, axis_size=2, in_axes=(0), out_axes=(0), body=fn(%xs: f32[8]) -> f32[8] {
    %d = axis_index[axis_name=dev]
    %n = add %d, 1
    %r = pallas_call[kernel=@k, grid=(?), in_specs=[spec()], out_specs=[spec()], out_shapes=[f32[8]],
                     scratch=[ref<sem, semaphore>]] %n, %xs
    return %r
  }] %x
  return %out
}
)";
  interp::Array x = zeros(DType::f32, {2, 8});
  Obligation o = balance(text);
  CHECK_MESSAGE(o.verdict == Verdict::unknown, o.line());
  CHECK(has(o.detail, "the size of grid axis 0 is computed on each device"));
  CHECK(has(run_error(text, {x}), "deadlock"));
  // The same size on every device (computed from literals): proved, and it runs.
  std::string same = replace_once(text, "%n = add %d, 1", "%n = add 1:i32, 1:i32");
  Obligation p = balance(same);
  CHECK_MESSAGE(p.verdict == Verdict::proved, p.line());
  check_runs_in_orders(same, {x});
}

TEST_CASE("a ring proved for every device count from 2 is checked as given on one device") {
  // Each device signals its right neighbour unless that is itself, and always waits.
  const std::string text = R"(
kernel @k(%x: ref<f32[8], vmem>, %o: ref<f32[8], vmem>, %s: ref<sem, semaphore>) {
  %me = axis_index[axis_name=dev]
  %n = axis_size[axis_name=dev]
  %me1 = add %me, 1
  %right = rem %me1, %n
  %self = eq %right, %me
  cond[branches=[fn(%s0: ref<sem, semaphore>, %t0: i32) {
    semaphore_signal %s0, 1, %t0
  }, fn(%s1: ref<sem, semaphore>, %t1: i32) { }]] %self, %s, %right
  semaphore_wait %s, 1
  %a = get %x[:]
  swap %o[:], %a
}
func @main(%x: f32[1,8]) -> f32[1,8] {
  %out = pmap[axis_name=dev, axis_size=1, in_axes=(0), out_axes=(0), body=fn(%xs: f32[8]) -> f32[8] {
    %r = pallas_call[kernel=@k, grid=(1), in_specs=[spec()], out_specs=[spec()], out_shapes=[f32[8]],
                     scratch=[ref<sem, semaphore>]] %xs
    return %r
  }] %x
  return %out
}
)";
  Obligation o = balance(text);
  CHECK_MESSAGE(o.verdict == Verdict::failed, o.line());
  CHECK(has(run_error(text, {zeros(DType::f32, {1, 8})}), "deadlock"));
  // Two devices: proved for every count, and the run agrees.
  std::string two = replace_once(text, "axis_size=1", "axis_size=2");
  two = replace_once(two, "func @main(%x: f32[1,8]) -> f32[1,8]", "func @main(%x: f32[2,8]) -> f32[2,8]");
  Obligation p = balance(two);
  CHECK_MESSAGE(p.verdict == Verdict::proved, p.line());
  CHECK(has(p.detail, "for every device count from 2"));
  CHECK(run_error(two, {zeros(DType::f32, {2, 8})}) == "");
}

TEST_CASE("a remote signal or DMA to a device outside the pmap is FAILED, naming the grid point and the device") {
  // Device d signals d + 1 without a modulo; every device but 0 waits.
  const std::string signal = R"(
kernel @k(%x: ref<f32[8], vmem>, %o: ref<f32[8], vmem>, %s: ref<sem, semaphore>) {
  %me = axis_index[axis_name=dev]
  %right = add %me, 1
  %first = eq %me, 0
  semaphore_signal %s, 1, %right
  cond[branches=[fn(%s0: ref<sem, semaphore>) {
    semaphore_wait %s0, 1
  }, fn(%s1: ref<sem, semaphore>) { }]] %first, %s
  %a = get %x[:]
  swap %o[:], %a
}
func @main(%x: f32[4,8]) -> f32[4,8] {
  %out = pmap[axis_name=dev, axis_size=4, in_axes=(0), out_axes=(0), body=fn(%xs: f32[8]) -> f32[8] {
    %r = pallas_call[kernel=@k, grid=(1), in_specs=[spec()], out_specs=[spec()], out_shapes=[f32[8]],
                     scratch=[ref<sem, semaphore>]] %xs
    return %r
  }] %x
  return %out
}
)";
  interp::Array x = zeros(DType::f32, {4, 8});
  Obligation o = balance(signal);
  CHECK_MESSAGE(o.verdict == Verdict::failed, o.line());
  CHECK(has(o.detail, "at grid point (0), semaphore_signal at <test>:6:3 on device 3 targets device 4, which does not exist"));
  CHECK(has(run_error(signal, {x}), "device id 4 is out of range"));
  // The same with a remote DMA.
  const std::string dma = R"(
kernel @k(%x: ref<f32[8], vmem>, %o: ref<f32[8], vmem>, %buf: ref<f32[8], vmem>, %send: ref<dma_sem, semaphore>,
          %recv: ref<dma_sem, semaphore>) {
  %me = axis_index[axis_name=dev]
  %right = add %me, 1
  %first = eq %me, 0
  dma_start %x[:], %buf[:], %recv, %send, %right
  dma_wait %send, %x[:]
  cond[branches=[fn(%r0: ref<dma_sem, semaphore>, %b0: ref<f32[8], vmem>) {
    dma_wait %r0, %b0[:]
  }, fn(%r1: ref<dma_sem, semaphore>, %b1: ref<f32[8], vmem>) { }]] %first, %recv, %buf
  %a = get %x[:]
  swap %o[:], %a
}
func @main(%x: f32[4,8]) -> f32[4,8] {
  %out = pmap[axis_name=dev, axis_size=4, in_axes=(0), out_axes=(0), body=fn(%xs: f32[8]) -> f32[8] {
    %r = pallas_call[kernel=@k, grid=(1), in_specs=[spec()], out_specs=[spec()], out_shapes=[f32[8]],
                     scratch=[ref<f32[8], vmem>, ref<dma_sem, semaphore>, ref<dma_sem, semaphore>]] %xs
    return %r
  }] %x
  return %out
}
)";
  Obligation d = balance(dma);
  CHECK_MESSAGE(d.verdict == Verdict::failed, d.line());
  CHECK(has(d.detail, "dma_start at <test>:7:3 on device 3 targets device 4, which does not exist"));
  CHECK(has(run_error(dma, {x}), "device id 4 is out of range"));
}

TEST_CASE("carried state: a DMA writes its destination, whatever region its dma_wait names") {
  // The copy fills buf[1]; the wait names buf[0], which then holds what the
  // previous step on this core left there.
  const std::string text = R"(
index_map @rows(%i: i32) -> (i32, i32) { return %i, 0 }
kernel @k(%x: ref<f32[32,128], any>, %y: ref<f32[8,128], vmem>, %o: ref<f32[8,128], vmem>, %buf: ref<f32[2,8,128], vmem>,
          %sem: ref<dma_sem, semaphore>) {
  %i = program_id[axis=0]
  %row = mul %i, 8
  dma_start %x[ds(%row, 8), :], %buf[1, :, :], %sem
  dma_wait %sem, %buf[0, :, :]
  %v = get %buf[0, :, :]
  swap %o[:, :], %v
  %w = get %y[:, :]
  swap %buf[0, :, :], %w
}
func @main(%x: f32[32,128], %y: f32[32,128]) -> f32[32,128] {
  %out = pallas_call[kernel=@k, grid=(4), in_specs=[spec(mem=any), spec((8, 128), @rows)], out_specs=[spec((8, 128), @rows)],
                     out_shapes=[f32[32,128]], scratch=[ref<f32[2,8,128], vmem>, ref<dma_sem, semaphore>],
                     dimension_semantics=(parallel)] %x, %y
  return %out
}
)";
  std::vector<interp::Array> in{ramp({32, 128}), ramp({32, 128})};
  Obligation o = carried(text);
  CHECK_MESSAGE(o.verdict == Verdict::failed, o.line());
  CHECK(has(o.detail, "get %buf at <test>:9:3 reads scratch 0 before this grid step writes it"));
  CHECK(output_varies(text, in));
  // Reading the copy's destination, buf[1], after the same wait: proved, and every run agrees.
  std::string dest = replace_once(text, "%v = get %buf[0, :, :]", "%v = get %buf[1, :, :]");
  Obligation p = carried(dest);
  CHECK_MESSAGE(p.verdict == Verdict::proved, p.line());
  CHECK(!output_varies(dest, in));
}

TEST_CASE("carried state: a read of a bounded block's tail behind a select_n mask is unknown, not FAILED") {
  // Block i holds 16 - 4i elements; the kernel reads all 16 and keeps the first 16 - 4i.
  const std::string text = R"(
index_map @slice(%i: i32) -> (i32, i32) {
  %start = mul %i, 16
  %d = mul %i, 4
  %size = sub 16:i32, %d
  return %start, %size
}
index_map @own(%i: i32) -> (i32) {
  return %i
}
kernel @k(%x: ref<f32[16], vmem>, %o: ref<f32[16], vmem>) {
  %i = program_id[axis=0]
  %d = mul %i, 4
  %n = sub 16:i32, %d
  %nb = broadcast_in_dim[shape=(16), broadcast_dimensions=()] %n
  %io = iota[dtype=i32, shape=(16), dimension=0]
  %keep = lt %io, %nb
  %v = get %x[:]
  %zero = broadcast_in_dim[shape=(16), broadcast_dimensions=()] 0.0:f32
  %m = select_n %keep, %zero, %v
  swap %o[:], %m
}
func @main(%a: f32[64]) -> f32[64] {
  %r = pallas_call[kernel=@k, grid=(4), in_specs=[spec((bounded(16)), @slice)], out_specs=[spec((16), @own)],
                   out_shapes=[f32[64]], dimension_semantics=(parallel)] %a
  return %r
}
)";
  std::vector<interp::Array> in{ramp({64})};
  Obligation o = carried(text);
  CHECK_MESSAGE(o.verdict == Verdict::unknown, o.line());
  CHECK(has(o.detail, "select_n at <test>:20:3"));
  CHECK(!output_varies(text, in));
  // Without the mask the stale tail reaches the output: FAILED, and the runs differ.
  std::string bare = replace_once(text, "swap %o[:], %m", "swap %o[:], %v");
  Obligation f = carried(bare);
  CHECK_MESSAGE(f.verdict == Verdict::failed, f.line());
  CHECK(output_varies(bare, in));
  // A read whose value goes nowhere shows nothing.
  std::string dead = replace_once(text, "swap %o[:], %m", "swap %o[:], %zero");
  Obligation d = carried(dead);
  CHECK_MESSAGE(d.verdict == Verdict::proved, d.line());
}

TEST_CASE("a deadlock found by running the protocol names the scalar prefetch values it ran with") {
  // Device `who` sends first; any other value names no device of two, and both wait.
  const std::string text = R"(
kernel @k(%who: ref<i32[1], smem>, %x: ref<f32[8], vmem>, %o: ref<f32[8], vmem>, %s: ref<sem, semaphore>) {
  %d = axis_index[axis_name=dev]
  %w = get %who[0]
  %other = sub 1, %d
  %first = eq %d, %w
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
func @main(%who: i32[1], %x: f32[2,8]) -> f32[2,8] {
  %out = pmap[axis_name=dev, axis_size=2, in_axes=(none, 0), out_axes=(0), body=fn(%wh: i32[1], %xs: f32[8]) -> f32[8] {
    %r = pallas_call[kernel=@k, grid=(1), num_scalar_prefetch=1, in_specs=[spec()], out_specs=[spec()], out_shapes=[f32[8]],
                     scratch=[ref<sem, semaphore>]] %wh, %xs
    return %r
  }] %who, %x
  return %out
}
)";
  interp::Array x = zeros(DType::f32, {2, 8});
  Obligation o = balance(text);
  CHECK_MESSAGE(o.verdict == Verdict::failed, o.line());
  CHECK_MESSAGE(has(o.detail, "a deadlock across devices (with wh[0] = "), o.detail);
  CHECK(has(run_error(text, {ints({1}, {2}), x}), "deadlock"));
  CHECK(run_error(text, {ints({1}, {1}), x}) == "");
  // With who in [0, 2) every value runs, but a run on one model's value
  // proves nothing for the others: unknown, naming the value it ran with.
  Options opts;
  opts.assumptions.push_back({"who", 0, 2});
  Obligation u = find(prove_text(text, opts), "kernel", "semaphore balance");
  CHECK_MESSAGE(u.verdict == Verdict::unknown, u.line());
  CHECK(has(u.detail, "decides it only for the values of one model (wh[0] = "));
  for (double who : {0.0, 1.0}) CHECK(run_error(text, {ints({1}, {who}), x}) == "");
}

TEST_CASE("a core_map ring proved for every core count from 2 is checked as given on one core") {
  const std::string text = R"(
func @main(%x: ref<f32[256,128], hbm>) {
  core_map[body=fn(%hr: ref<f32[256,128], hbm>) {
    %c = axis_index[axis_name=core]
    %n = axis_size[axis_name=core]
    %c1 = add %c, 1
    %right = rem %c1, %n
    %dev = device_id
    run_scoped[body=fn(%r: i32, %d: i32, %me: i32, %s: ref<sem, semaphore>) {
      %alone = eq %r, %me
      cond[branches=[fn(%s0: ref<sem, semaphore>, %t0: i32, %d0: i32) {
        semaphore_signal %s0, 1, %d0, %t0
      }, fn(%s1: ref<sem, semaphore>, %t1: i32, %d1: i32) { }]] %alone, %s, %r, %d
      semaphore_wait %s, 1
    }] %right, %dev, %c
  }, mesh_axes=(core), mesh_shape=(1)] %x
}
)";
  interp::Array x = zeros(DType::f32, {256, 128});
  Obligation o = balance(text);
  CHECK_MESSAGE(o.verdict == Verdict::failed, o.line());
  CHECK(has(run_error(text, {x}), "deadlock"));
  std::string two = replace_once(text, "mesh_shape=(1)", "mesh_shape=(2)");
  Obligation p = balance(two);
  CHECK_MESSAGE(p.verdict == Verdict::proved, p.line());
  CHECK(has(p.detail, "for every core count from 2"));
  check_runs_in_orders(two, {x});
}

namespace {

// A self-signal under a flag read from scalar prefetch the pmap body computes
// as 2 * axis_index: the flag is false on every device.
const std::string kComputedFlag = R"(
kernel @k(%p: ref<i32[1], smem>, %x: ref<f32[4,8], vmem>, %o: ref<f32[4,8], vmem>, %s: ref<sem, semaphore>) {
  %f = get %p[0]
  %odd = rem %f, 2
  %flag = ne %odd, 0
  cond[branches=[fn(%s0: ref<sem, semaphore>) { }, fn(%s1: ref<sem, semaphore>) {
    semaphore_signal %s1, 1
  }]] %flag, %s
  %v = get %x[:, :]
  swap %o[:, :], %v
}
func @main(%x: f32[2,4,8]) -> f32[2,4,8] {
  %out = pmap[axis_name=dev, axis_size=2, in_axes=(0), out_axes=(0), body=fn(%xs: f32[4,8]) -> f32[4,8] {
    %d = axis_index[axis_name=dev]
    %z = iota[dtype=i32, shape=(1), dimension=0]
    %ps = add %z, %d
    %pe = mul %ps, 2
    %r = pallas_call[kernel=@k, grid=(1), num_scalar_prefetch=1, in_specs=[spec()], out_specs=[spec()],
                     out_shapes=[f32[4,8]], scratch=[ref<sem, semaphore>]] %pe, %xs
    return %r
  }] %x
  return %out
}
)";

// A dynamic grid size the pmap body computes from axis_index.
std::string dynamic_grid(const std::string& kernel, const std::string& size) {
  return kernel + R"(
func @main(%x: f32[2,4,8]) -> f32[2,4,8] {
  %out = pmap[axis_name=dev, axis_size=2, in_axes=(0), out_axes=(0), body=fn(%xs: f32[4,8]) -> f32[4,8] {
    %d = axis_index[axis_name=dev]
    %steps = )" + size + R"(
    %r = pallas_call[kernel=@k, grid=(?), in_specs=[spec((4, 8), fn(%i: i32) -> (i32, i32) { return 0, 0 })],
                     out_specs=[spec((4, 8), fn(%i: i32) -> (i32, i32) { return 0, 0 })], out_shapes=[f32[4,8]],
                     scratch=[ref<sem, semaphore>]] %steps, %xs
    return %r
  }] %x
  return %out
}
)";
}

const std::string kCopyKernel = R"(
kernel @k(%x: ref<f32[4,8], vmem>, %o: ref<f32[4,8], vmem>, %s: ref<sem, semaphore>) {
  %v = get %x[:, :]
  swap %o[:, :], %v
}
)";

// Device 1 waits for its own signal; device 0 skips the wait.
const std::string kWaitUnlessFirst = R"(
kernel @k(%x: ref<f32[4,8], vmem>, %o: ref<f32[4,8], vmem>, %s: ref<sem, semaphore>) {
  %me = axis_index[axis_name=dev]
  semaphore_signal %s, 1
  %first = eq %me, 0
  cond[branches=[fn(%s0: ref<sem, semaphore>) { }, fn(%s1: ref<sem, semaphore>) {
    semaphore_wait %s1, 1
  }]] %first, %s
  %v = get %x[:, :]
  swap %o[:, :], %v
}
)";

}  // namespace

TEST_CASE("scalar prefetch the pmap body computes from axis_index: claims use each device's value") {
  interp::Array x = ramp({2, 4, 8});
  Obligation o = balance(kComputedFlag);
  CHECK_MESSAGE(o.verdict == Verdict::proved, o.line());
  CHECK(run_error(kComputedFlag, {x}) == "");
  // 2 * d + 1 is odd on every device: each signals itself and never waits.
  std::string odd = replace_once(kComputedFlag, "%pe = mul %ps, 2", "%pm = mul %ps, 2\n    %pe = add %pm, 1");
  Obligation f = balance(odd);
  CHECK_MESSAGE(f.verdict == Verdict::failed, f.line());
  CHECK(has(run_error(odd, {x}), "non-zero count"));
}

TEST_CASE("a dynamic grid size of 0 on a device: no step runs there, no output block is written") {
  interp::Array x = ramp({2, 4, 8});
  std::string zero = dynamic_grid(kCopyKernel, "rem %d, 2");  // device 0 runs no step
  Obligation o = find(prove_text(zero), "out[0]", "output coverage");
  CHECK_MESSAGE(o.verdict == Verdict::failed, o.line());
  std::vector<double> out = output(zero, {x}, 1, std::nullopt);
  CHECK(std::isnan(out.at(0)));   // device 0's block: never written
  CHECK(out.at(32) == 33);        // device 1's block: copied
  std::string one = dynamic_grid(kCopyKernel, "add %d, 1");  // every device runs a step
  Obligation p = find(prove_text(one), "out[0]", "output coverage");
  CHECK_MESSAGE(p.verdict == Verdict::proved, p.line());
  // A device with no step takes no protocol step: device 1 (size 0) skips no wait it never reaches.
  std::string empty = dynamic_grid(kWaitUnlessFirst, "sub 1, %d");
  Obligation b = balance(empty);
  CHECK_MESSAGE(b.verdict != Verdict::failed, b.line());
  CHECK(run_error(empty, {x}) == "");
  // Both devices run steps: device 1 leaves its signals, and the run shows it.
  std::string both = dynamic_grid(kWaitUnlessFirst, "add %d, 1");
  Obligation f = balance(both);
  CHECK_MESSAGE(f.verdict == Verdict::failed, f.line());
  CHECK(has(run_error(both, {x}), "non-zero count"));
}

TEST_CASE("carried state without a parallel axis: the first step reads scratch no step wrote") {
  const std::string text = R"(
kernel @k(%x: ref<f32[8,8], any>, %o: ref<f32[4,8], vmem>, %buf: ref<f32[2,4,8], vmem>, %sem: ref<dma_sem, semaphore>) {
  %i = program_id[axis=0]
  %r = mul %i, 4
  dma_start %x[ds(%r, 4), :], %buf[0, :, :], %sem
  dma_wait %sem, %buf[1, :, :]
  %v = get %buf[1, :, :]
  swap %o[:, :], %v
}
func @main(%x: f32[8,8]) -> f32[8,8] {
  %r = pallas_call[kernel=@k, grid=(2), in_specs=[spec(mem=any)],
                   out_specs=[spec((4, 8), fn(%i: i32) -> (i32, i32) { return %i, 0 })],
                   out_shapes=[f32[8,8]], scratch=[ref<f32[2,4,8], vmem>, ref<dma_sem, semaphore>]] %x
  return %r
}
)";
  Obligation o = carried(text);
  CHECK_MESSAGE(o.verdict == Verdict::failed, o.line());
  CHECK(has(o.detail, "first step of the grid reads uninitialized memory"));
  std::vector<double> out = output(text, {ramp({8, 8})}, 1, std::nullopt);
  CHECK(std::isnan(out.at(0)));
  // Reading the slot the DMA fills: proved, and the run copies it.
  std::string fixed = replace_once(replace_once(text, "%v = get %buf[1, :, :]", "%v = get %buf[0, :, :]"),
                                   "dma_wait %sem, %buf[1, :, :]", "dma_wait %sem, %buf[0, :, :]");
  Obligation p = carried(fixed);
  CHECK_MESSAGE(p.verdict == Verdict::proved, p.line());
  CHECK(output(fixed, {ramp({8, 8})}, 1, std::nullopt).at(0) == 1);
}

TEST_CASE("DMA races: remote copies of several grid steps into one region are not proved") {
  const std::string text = R"(
kernel @k(%x: ref<f32[4,8], vmem>, %o: ref<f32[4,8], vmem>, %b: ref<f32[2,4,8], vmem>, %rs: ref<dma_sem[2], semaphore>) {
  %me = axis_index[axis_name=dev]
  %t = add %me, 1
  %right = rem %t, 2
  %v0 = get %x[:, :]
  swap %b[0, :, :], %v0
  dma_start %b[0, :, :], %b[1, :, :], %rs[1], %rs[0], %right
  dma_wait %rs[1], %b[1, :, :]
  dma_wait %rs[0], %b[0, :, :]
  %v1 = get %b[1, :, :]
  %s = add %v0, %v1
  swap %o[:, :], %s
}
func @main(%x: f32[2,8,8]) -> f32[2,8,8] {
  %out = pmap[axis_name=dev, axis_size=2, in_axes=(0), out_axes=(0), body=fn(%xs: f32[8,8]) -> f32[8,8] {
    %r = pallas_call[kernel=@k, grid=(2), in_specs=[spec((4, 8), fn(%i: i32) -> (i32, i32) { return %i, 0 })],
                     out_specs=[spec((4, 8), fn(%i: i32) -> (i32, i32) { return %i, 0 })], out_shapes=[f32[8,8]],
                     scratch=[ref<f32[2,4,8], vmem>, ref<dma_sem[2], semaphore>], dimension_semantics=(arbitrary)] %xs
    return %r
  }] %x
  return %out
}
)";
  Obligation o = races(text);
  CHECK_MESSAGE(o.verdict == Verdict::unknown, o.line());
  CHECK(has(o.detail, "across grid steps"));
  CHECK(has(run_races(text, {ramp({2, 8, 8})}), "RACE"));
  // One grid step: the receiving side is checked as before.
  Obligation one = races(replace_once(text, "grid=(2)", "grid=(1)"));
  CHECK_MESSAGE(!has(one.detail, "across grid steps"), one.line());
}
