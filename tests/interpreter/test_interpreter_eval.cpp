// The evaluator on plain functions: state ops with every indexer form,
// control flow, call, run_scoped, and their run-time errors. References are
// computed with plain loops here.
#include <bit>

#include "interp_test_util.h"

using namespace itest;

TEST_CASE("state ops: dynamic points, slices, strides, addupdate, swap result") {
  const char* text = R"(
func @main(%x: f32[4,8], %i: i32) -> (f32[8], f32[2,4], f32[4,8], f32[4]) {
  %a, %b, %c, %d = run_scoped[body=fn(%xx: f32[4,8], %ii: i32, %r: ref<f32[4,8], vmem>) -> (f32[8], f32[2,4], f32[4,8], f32[4]) {
    swap %r[:, :], %xx
    %row = get %r[%ii, :]
    %blk = get %r[ds(1, 2), ds(%ii, 4, 2)]
    addupdate %r[%ii, :], %row
    %old = swap %r[:, 3], 7.0
    %all = get %r[:, :]
    return %row, %blk, %all, %old
  }] %x, %i
  return %a, %b, %c, %d
}
)";
  Array x = iota(DType::f32, {4, 8});
  auto out = run(text, {x, Array::scalar(DType::i32, 1)});
  REQUIRE(out.size() == 4);
  std::vector<double> row, blk, all = values(x), old;
  for (int j = 0; j < 8; ++j) row.push_back(8 + j);
  for (int r = 1; r < 3; ++r)
    for (int k = 0; k < 4; ++k) blk.push_back(r * 8 + 1 + 2 * k);
  for (int j = 0; j < 8; ++j) all[8 + j] *= 2;
  for (int r = 0; r < 4; ++r) {
    old.push_back(all[r * 8 + 3]);
    all[r * 8 + 3] = 7;
  }
  check_close(out[0], row, 0);
  check_close(out[1], blk, 0);
  check_close(out[2], all, 0);
  check_close(out[3], old, 0);
  CHECK(out[1].shape() == Shape{2, 4});
}

TEST_CASE("a Ref parameter of a function is a buffer; get of a value shared by swap stays immutable") {
  const char* text = R"(
func @main(%r: ref<f32[4], vmem>, %v: f32[4]) -> (f32[4], f32[4]) {
  %before = get %r[:]
  swap %r[:], %v
  addupdate %r[:], %v
  %after = get %r[:]
  return %before, %after
}
)";
  Array r = iota(DType::f32, {4});
  Array v = iota(DType::f32, {4}, 10);
  auto out = run(text, {r, v});
  check_close(out[0], {0, 1, 2, 3}, 0);
  check_close(out[1], {0, 20, 40, 60}, 0);
  check_close(v, {0, 10, 20, 30}, 0);  // the caller's array is never written
}

TEST_CASE("out-of-bounds get: raise names the buffer and range; uninitialized reads NaN") {
  const char* text = R"(
func @main(%x: f32[4], %i: i32) -> f32[2] {
  %a = run_scoped[body=fn(%xx: f32[4], %ii: i32, %r: ref<f32[4], vmem>) -> f32[2] {
    swap %r[:], %xx
    %v = get %r[ds(%ii, 2)]
    return %v
  }] %x, %i
  return %a
}
)";
  Array x = iota(DType::f32, {4});
  std::string err = run_error(text, {x, Array::scalar(DType::i32, 3)});
  CHECK(contains(err, "test.tsr:5:5: error: get: Out-of-bounds read of vmem buffer of run_scoped \"r\""));
  CHECK(contains(err, "reading [3:5] but buffer has shape (4,)"));
  RunOptions o;
  o.oob = RunOptions::Oob::uninitialized;
  auto out = run(text, {x, Array::scalar(DType::i32, 3)}, o);
  CHECK(out[0].get(0) == 3);
  CHECK(std::isnan(out[0].get(1)));
  o.uninit = RunOptions::Uninit::zero;
  out = run(text, {x, Array::scalar(DType::i32, 3)}, o);
  CHECK(out[0].get(1) == 0);
  // Writes out of bounds are always errors.
  const char* wtext = R"(
func @main(%i: i32) -> f32[4] {
  %a = run_scoped[body=fn(%ii: i32, %r: ref<f32[4], vmem>) -> f32[4] {
    swap %r[ds(%ii, 2)], 1.0
    %v = get %r[:]
    return %v
  }] %i
  return %a
}
)";
  CHECK(contains(run_error(wtext, {Array::scalar(DType::i32, -1)}, o), "Out-of-bounds swap of vmem buffer"));
}

TEST_CASE("uninitialized scratch reads NaN / int max, or zero") {
  const char* text = R"(
func @main() -> (f32[2], i32[2], bool[2]) {
  %a, %b, %c = run_scoped[body=fn(%r: ref<f32[2], vmem>, %s: ref<i32[2], smem>, %t: ref<bool[2], vmem>) -> (f32[2], i32[2], bool[2]) {
    %x = get %r[:]
    %y = get %s[:]
    %z = get %t[:]
    return %x, %y, %z
  }]
  return %a, %b, %c
}
)";
  auto out = run(text, {});
  CHECK(std::isnan(out[0].get(0)));
  CHECK(out[1].get_int(1) == 2147483647);
  CHECK(out[2].get_int(0) == 1);
  RunOptions o;
  o.uninit = RunOptions::Uninit::zero;
  out = run(text, {}, o);
  CHECK(out[0].get(0) == 0);
  CHECK(out[1].get_int(1) == 0);
}

TEST_CASE("masked load and store") {
  const char* text = R"(
func @main(%x: f32[4], %m: bool[4]) -> (f32[4], f32[4]) {
  %a, %b = run_scoped[body=fn(%xx: f32[4], %mm: bool[4], %r: ref<f32[4], vmem>) -> (f32[4], f32[4]) {
    swap %r[:], 0.0
    store %r[:], %xx, %mm
    %s = get %r[:]
    %l = load %r[:], %mm, -1.0
    return %s, %l
  }] %x, %m
  return %a, %b
}
)";
  Array x = iota(DType::f32, {4}, 1);
  Array m = Array::from_values(DType::i1, {4}, {1, 0, 1, 0});
  auto out = run(text, {x, m});
  check_close(out[0], {0, 0, 2, 0}, 0);
  check_close(out[1], {0, -1, 2, -1}, 0);
}

TEST_CASE("cond: n-way index clamped, bool picks branch 1 for true") {
  const char* text = R"(
func @main(%i: i32, %b: bool, %x: f32) -> (f32, f32) {
  %r = cond[branches=[fn(%a: f32) -> f32 { %s = add %a, 1.0
       return %s }, fn(%a: f32) -> f32 { %s = add %a, 2.0
       return %s }, fn(%a: f32) -> f32 { %s = add %a, 3.0
       return %s }]] %i, %x
  %q = cond[branches=[fn(%a: f32) -> f32 { return %a }, fn(%a: f32) -> f32 { %n = neg %a
       return %n }]] %b, %x
  return %r, %q
}
)";
  auto f = [&](int i, bool b) {
    auto out = run(text, {Array::scalar(DType::i32, i), Array::scalar(DType::i1, b), Array::scalar(DType::f32, 10)});
    return std::make_pair(out[0].get(0), out[1].get(0));
  };
  CHECK(f(-5, false) == std::make_pair(11.0, 10.0));
  CHECK(f(1, true) == std::make_pair(12.0, -10.0));
  CHECK(f(99, false) == std::make_pair(13.0, 10.0));
}

TEST_CASE("while, for and scan (forward and reverse) match loops") {
  const char* text = R"(
func @main(%x: f32[5], %n: i32) -> (i32, f32, f32, f32[5], f32, f32[5]) {
  %w = while[cond=fn(%lim: i32, %k: i32) -> bool { %t = lt %k, %lim
       return %t }, body=fn(%lim: i32, %k: i32) -> i32 { %k2 = mul %k, 2
       %k3 = add %k2, 1
       return %k3 }, num_consts=1] %n, 0
  %f = for[body=fn(%i: i32, %acc: f32) -> f32 { %fi = convert_element_type[new_dtype=f32] %i
       %s = add %acc, %fi
       return %s }] 2:i32, 6:i32, 0.5
  %c, %ys = scan[body=fn(%acc: f32, %xi: f32) -> (f32, f32) { %p = add %acc, %xi
       return %p, %p }, length=5, num_carry=1] 0.0, %x
  %cr, %yr = scan[body=fn(%acc: f32, %xi: f32) -> (f32, f32) { %p = add %acc, %xi
       return %p, %p }, length=5, num_carry=1, reverse=true] 0.0, %x
  return %w, %f, %c, %ys, %cr, %yr
}
)";
  Array x = Array::from_values(DType::f32, {5}, {1, 2, 3, 4, 5});
  auto out = run(text, {x, Array::scalar(DType::i32, 20)});
  int w = 0;
  while (w < 20) w = w * 2 + 1;
  CHECK(out[0].get_int(0) == w);
  CHECK(out[1].get(0) == 0.5 + 2 + 3 + 4 + 5);
  CHECK(out[2].get(0) == 15);
  check_close(out[3], {1, 3, 6, 10, 15}, 0);
  CHECK(out[4].get(0) == 15);
  check_close(out[5], {15, 14, 12, 9, 5}, 0);
}

TEST_CASE("call runs a module function") {
  const char* text = R"(
func @sq(%a: f32[3]) -> f32[3] {
  %s = mul %a, %a
  return %s
}
func @main(%x: f32[3]) -> f32[3] {
  %y = call[callee=@sq] %x
  %z = call[callee=@sq] %y
  return %z
}
)";
  auto out = run(text, {Array::from_values(DType::f32, {3}, {1, 2, 3})});
  check_close(out[0], {1, 16, 81}, 0);
}

TEST_CASE("run_scoped refuses HBM scratch unless allowed") {
  const char* text = R"(
func @main(%x: f32[4]) -> f32[4] {
  %a = run_scoped[body=fn(%xx: f32[4], %h: ref<f32[4], hbm>, %v: ref<f32[4], vmem>, %s: ref<dma_sem, semaphore>) -> f32[4] {
    swap %v[:], %xx
    dma_start %v[:], %h[:], %s
    dma_wait %s, %h[:]
    dma_start %h[:], %v[:], %s
    dma_wait %s, %v[:]
    %r = get %v[:]
    return %r
  }] %x
  return %a
}
)";
  Array x = iota(DType::f32, {4});
  CHECK(contains(run_error(text, {x}), "Cannot allocate HBM in `run_scoped`"));
  RunOptions o;
  o.allow_hbm_scoped = true;
  for (auto dma : {RunOptions::Dma::eager, RunOptions::Dma::on_wait}) {
    o.dma = dma;
    check_close(run(text, {x}, o)[0], values(x), 0);
  }
}

TEST_CASE("loading an HBM Ref directly is an error that says to DMA it") {
  const char* text = R"(
func @main(%r: ref<f32[4], any>) -> f32[4] {
  %v = get %r[:]
  return %v
}
)";
  Module m = parse_module(text, "test.tsr");  // the verifier rejects this statically too
  try {
    run_function(m, "main", {iota(DType::f32, {4})});
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(contains(e.formatted(), "test.tsr:3:3: error: get: the Ref any buffer"));
    CHECK(contains(e.formatted(), "copy it to or from VMEM with dma_start / dma_wait"));
  }
}

TEST_CASE("program_id outside a kernel, bad input types, and max_steps are errors") {
  const char* text = R"(
func @main(%x: f32[2]) -> i32 {
  %p = program_id[axis=0]
  return %p
}
)";
  Module m = parse_module(text, "test.tsr");  // the verifier rejects this statically too
  try {
    run_function(m, "main", {iota(DType::f32, {2})});
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(contains(e.formatted(), "program_id: used outside a pallas_call kernel"));
  }
  try {
    run_function(m, "main", {iota(DType::f32, {3})});
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(contains(e.formatted(), "input %x of @main must be f32[2], got f32[3]"));
  }
  const char* loop = R"(
func @main(%n: i32) -> i32 {
  %w = while[cond=fn(%k: i32) -> bool { %t = ge %k, 0
       return %t }, body=fn(%k: i32) -> i32 { %k2 = add %k, 1
       return %k2 }] %n
  return %w
}
)";
  RunOptions o;
  o.max_steps = 1000;
  CHECK(contains(run_error(loop, {Array::scalar(DType::i32, 0)}, o), "stopped after 1000 steps"));
}

TEST_CASE("debug_print writes to stdout") {
  const char* text = R"(
func @main(%x: i32) -> i32 {
  debug_print[fmt="x is {}"] %x
  return %x
}
)";
  // Redirect stdout into a buffer.
  std::stringstream buf;
  std::streambuf* old = std::cout.rdbuf(buf.rdbuf());
  run(text, {Array::scalar(DType::i32, 42)});
  std::cout.rdbuf(old);
  CHECK(buf.str() == "x is 42\n");
}

TEST_CASE("pmap: mapped and unmapped operands, out_axes, axis_index and device_id") {
  const char* text = R"(
func @main(%x: f32[2,3], %s: f32) -> (f32[2,3], i32[3]) {
  %y, %d = pmap[axis_name=dev, axis_size=3, in_axes=(1, none), out_axes=(1, 0),
                body=fn(%col: f32[2], %sc: f32) -> (f32[2], i32) {
                  %i = axis_index[axis_name=dev]
                  %id = device_id
                  %fi = convert_element_type[new_dtype=f32] %i
                  %a = mul %col, %sc
                  %b = add %a, %fi
                  return %b, %id
                }] %x, %s
  return %y, %d
}
)";
  Array x = iota(DType::f32, {2, 3});
  auto out = run(text, {x, Array::scalar(DType::f32, 10)});
  check_close(out[0], {0, 11, 22, 30, 41, 52}, 0);
  check_close(out[1], {0, 1, 2}, 0);
}

TEST_CASE("axis_size: the size of an enclosing pmap axis, core_map mesh axis or named grid axis") {
  const char* text = R"(
kernel @k(%o: ref<i32[2,3], smem>) {
  %i = program_id[axis=0]
  %d = axis_size[axis_name=dev]
  %c = add 0, 7
  %g = axis_size[axis_name=rows]
  %dc = mul %d, 10
  %n = add %dc, %c
  swap %o[%i, 0], %n
  swap %o[%i, 1], %g
  %id = axis_index[axis_name=dev]
  swap %o[%i, 2], %id
}
func @main(%x: f32[5]) -> i32[5,2,3] {
  %out = pmap[axis_name=dev, axis_size=5, in_axes=(0), out_axes=(0), body=fn(%xs: f32) -> i32[2,3] {
    %o = pallas_call[kernel=@k, grid=(2), grid_names=(rows), in_specs=[], out_specs=[spec((2, 3), fn(%i: i32) -> (i32, i32) { return 0, 0 }, mem=smem)],
                     out_shapes=[i32[2,3]], dimension_semantics=(arbitrary)]
    return %o
  }] %x
  return %out
}
)";
  auto out = run(text, {iota(DType::f32, {5})});
  for (int64_t d = 0; d < 5; ++d)
    for (int64_t i = 0; i < 2; ++i) {
      CHECK(out[0].get(d * 6 + i * 3 + 0) == 57);
      CHECK(out[0].get(d * 6 + i * 3 + 1) == 2);
      CHECK(out[0].get(d * 6 + i * 3 + 2) == d);
    }
  const char* mesh = R"(
func @main(%r: ref<i32[6], smem>) -> i32[6] {
  core_map[body=fn(%rr: ref<i32[6], smem>) {
    %a = axis_index[axis_name=a]
    %b = axis_index[axis_name=b]
    %na = axis_size[axis_name=a]
    %nb = axis_size[axis_name=b]
    %row = mul %a, %nb
    %k = add %row, %b
    %s = mul %na, 100
    %v = add %s, %nb
    swap %rr[%k], %v
  }, mesh_axes=(a, b), mesh_shape=(2, 3)] %r
  %v = get %r[:]
  return %v
}
)";
  auto cores = run(mesh, {Array(DType::i32, {6})});
  for (int64_t k = 0; k < 6; ++k) CHECK(cores[0].get(k) == 203);
}

TEST_CASE("debug_check: a false predicate stops the run with its message; --no-debug-checks skips it") {
  const char* text = R"(
func @main(%x: f32[4]) -> f32[4] {
  %s = reduce_sum[axes=(0)] %x
  %ok = gt %s, 0.0
  debug_check[msg="the sum is positive"] %ok
  return %x
}
)";
  Array pos(DType::f32, {4}), neg(DType::f32, {4});
  for (int64_t i = 0; i < 4; ++i) pos.set(i, 1.0), neg.set(i, -1.0);
  CHECK(run(text, {pos})[0].get(0) == 1.0);
  CHECK_HAS(run_error(text, {neg}), "debug_check: check failed: the sum is positive");
  RunOptions off;
  off.debug_checks = false;
  CHECK(run(text, {neg}, off)[0].get(0) == -1.0);
}

TEST_CASE("prng: deterministic per seed, different seeds and draws differ, balanced bits, an error before seeding") {
  const char* text = R"(
func @main(%s: i32) -> (i32[64,32], i32[64,32]) {
  prng_seed %s, 3
  %a = prng_random_bits[shape=(64, 32)]
  %b = prng_random_bits[shape=(64, 32)]
  return %a, %b
}
)";
  auto draw = [&](int seed) { return run(text, {Array::scalar(DType::i32, seed)}); };
  std::vector<Array> x = draw(7), again = draw(7), other = draw(8);
  int64_t same_seed = 0, next_draw = 0, other_seed = 0, ones = 0;
  for (int64_t i = 0; i < x[0].size(); ++i) {
    same_seed += x[0].get_int(i) == again[0].get_int(i) && x[1].get_int(i) == again[1].get_int(i);
    next_draw += x[0].get_int(i) == x[1].get_int(i);
    other_seed += x[0].get_int(i) == other[0].get_int(i);
    ones += std::popcount(static_cast<uint32_t>(x[0].get_int(i)));
  }
  CHECK(same_seed == x[0].size());
  CHECK(next_draw == 0);
  CHECK(other_seed == 0);
  double mean = static_cast<double>(ones) / static_cast<double>(32 * x[0].size());  // 65536 bits
  CHECK(std::fabs(mean - 0.5) < 0.01);
  CHECK_HAS(run_error("func @main() -> i32[2] {\n  %a = prng_random_bits[shape=(2)]\n  return %a\n}\n", {}),
            "no prng_seed has run on this core before it");
}

TEST_CASE("prng: each core has its own generator; a kernel seeded by its program id draws the same on 1 or 2 cores") {
  const char* text = R"(
index_map @m(%i: i32) -> (i32, i32) { return %i, 0 }
kernel @k(%o: ref<i32[8,128], vmem>) {
  %i = program_id[axis=0]
  prng_seed %i
  %r = prng_random_bits[shape=(8, 128)]
  swap %o[:, :], %r
}
func @main() -> i32[32,128] {
  %out = pallas_call[kernel=@k, grid=(4), in_specs=[], out_specs=[spec((8, 128), @m)], out_shapes=[i32[32,128]],
                     dimension_semantics=(parallel)]
  return %out
}
)";
  RunOptions two;
  two.cores = 2;
  Array one_core = run(text, {})[0], two_cores = run(text, {}, two)[0];
  for (int64_t i = 0; i < one_core.size(); ++i) REQUIRE(one_core.get_int(i) == two_cores.get_int(i));
  CHECK(one_core.get_int(0) != one_core.get_int(8 * 128));  // blocks 0 and 1: different seeds
}
