// Limits of a run: the memory limit (every array the
// program's text sizes is checked against it, runtime/memory_limit.h), the
// i32 range of grid axes, and running out of memory below the limit.
#include "interp_test_util.h"

#include "runtime/memory_limit.h"

using namespace itest;

// element(128, 2^40, 0) pads the input to 2^40 + 128 floats: 4 TiB. The run
// stops at the pallas_call, naming the buffer, instead of trying to allocate.
TEST_CASE("memory limit: a huge element padding is a located error naming the operand") {
  const char* text = R"(
index_map @m(%i: i32) -> i32 {
  %e = mul %i, 128
  return %e
}
kernel @k(%x: ref<f32[128], vmem>, %o: ref<f32[128], vmem>) {
  %a = get %x[:]
  swap %o[:], %a
}
func @main(%x: f32[256]) -> f32[256] {
  %out = pallas_call[kernel=@k, grid=(2), in_specs=[spec((element(128, 1099511627776, 0)), @m)],
                     out_specs=[spec((128), @m)], out_shapes=[f32[256]]] %x
  return %out
}
)";
  std::string e = run_error(text, {random(DType::f32, {256}, 1)});
  CAPTURE(e);
  CHECK(contains(e, "test.tsr:11:3: error: pallas_call: the HBM buffer of input \"x\" (padded to (1099511628032,)): "
                    "allocating f32[1099511628032] (4 TiB) would exceed the memory limit of"));
  CHECK(contains(e, "(kernel @k)"));
}

TEST_CASE("memory limit: RunOptions::max_memory bounds every array; 0 means no limit") {
  const char* text = R"(
func @main() -> f32[1024,1024] {
  %a = iota[dtype=f32, shape=(1024, 1024), dimension=1]
  %b = add %a, 1.0:f32
  return %b
}
)";
  RunOptions o;
  o.max_memory = 6 << 20;  // room for 4 MiB of %a, not for %b beside it
  std::string e = run_error(text, {}, o);
  CAPTURE(e);
  CHECK(contains(e, "test.tsr:4:3: error: add: allocating f32[1024,1024] (4 MiB) would exceed the memory limit of 6 MiB"));
  CHECK(contains(e, "--max-memory"));
  o.max_memory = 16 << 20;
  CHECK(run(text, {}, o)[0].get(3) == 4);
  // The limit is the run's: it does not outlive it.
  CHECK(memory_limit() == default_memory_limit());
}

TEST_CASE("memory limit: scratch and semaphore scratch are checked before they are allocated") {
  const char* text = R"(
kernel @k(%o: ref<f32[8], vmem>, %s: ref<f32[1048576,1048576], vmem>) {
  swap %o[:], 1.0:f32
}
func @main() -> f32[8] {
  %out = pallas_call[kernel=@k, grid=(1), in_specs=[], out_specs=[spec()], out_shapes=[f32[8]],
                     scratch=[ref<f32[1048576,1048576], vmem>]]
  return %out
}
)";
  CHECK(contains(run_error(text, {}), "test.tsr:6:3: error: pallas_call: scratch \"s\": allocating f32[1048576,1048576] (4 TiB)"));
  const char* sems = R"(
kernel @k(%o: ref<f32[8], vmem>, %s: ref<sem[1000000000], semaphore>) {
  swap %o[:], 1.0:f32
}
func @main() -> f32[8] {
  %out = pallas_call[kernel=@k, grid=(1), in_specs=[], out_specs=[spec()], out_shapes=[f32[8]],
                     scratch=[ref<sem[1000000000], semaphore>]]
  return %out
}
)";
  CHECK(contains(run_error(sems, {}), "test.tsr:6:3: error: pallas_call: allocating 1000000000 semaphores for scratch \"s\""));
}

TEST_CASE("memory limit: an array of more than 2^63 elements is an error, not an overflow") {
  CHECK_THROWS_WITH_AS(Array::uninitialized(DType::f32, {int64_t{1} << 40, int64_t{1} << 40}),
                       doctest::Contains("has more than 2^63 elements"), Error);
  CHECK_THROWS_WITH_AS(Array::uninitialized(DType::f32, {int64_t{1} << 62}), doctest::Contains("has more than 2^63 bytes"),
                       Error);
  CHECK_THROWS_WITH_AS(Array::uninitialized(DType::f32, {int64_t{1} << 40}), doctest::Contains("would exceed the memory limit"),
                       Error);
}

// Without a limit, an allocation the machine cannot satisfy still ends in a
// located error (std::bad_alloc is caught at the op), never an abort.
TEST_CASE("out of memory below the limit is a located error") {
  const char* text = R"(
func @main() -> f32[70368744177664] {
  %a = iota[dtype=f32, shape=(70368744177664), dimension=0]
  return %a
}
)";
  RunOptions o;
  o.max_memory = 0;
  std::string e = run_error(text, {}, o);
  CAPTURE(e);
  CHECK(contains(e, "test.tsr:3:3: error: iota: out of memory"));
}

// Program ids are i32: the verifier rejects a grid axis of 2^31 points or
// more; the interpreter, given the module unverified, refuses it too instead
// of saturating program_id.
TEST_CASE("a grid axis of 2^31 points is rejected by the verifier and the interpreter") {
  const char* text = R"(
kernel @k(%o: ref<i32, smem>) {
  %p = program_id[axis=0]
  swap %o[], %p
}
func @main() -> i32 {
  %out = pallas_call[kernel=@k, grid=(2147483648), in_specs=[], out_specs=[spec(mem=smem)], out_shapes=[i32]]
  return %out
}
)";
  Module m = parse_module(text, "test.tsr");
  std::vector<Diagnostic> d = verify_module(m);
  REQUIRE(d.size() == 1);
  CHECK(d[0].str() == "test.tsr:7:3: error: grid size 2147483648 on axis 0 is too large: program ids are i32, so a grid "
                      "axis has at most 2^31 - 1 points");
  std::string e;
  try {
    run_function(m, "main", {});
  } catch (const Error& err) {
    e = err.formatted();
  }
  CHECK(contains(e, "test.tsr:7:3: error: pallas_call: grid size 2147483648 on axis 0 does not fit the i32 program ids"));
}

// A step of a few ops on big arrays can take minutes though max_steps is
// small: max_work counts the elements each op reads, writes and computes
// (dot_general 2MNK), and the elements block copies and DMAs move.
TEST_CASE("work limit: RunOptions::max_work stops a short program doing a lot of work; 0 means no limit") {
  const char* dot = R"(
func @main(%a: f32[64,64], %b: f32[64,64]) -> f32[64,64] {
  %p = dot_general[lhs_contracting=(1), rhs_contracting=(0)] %a, %b
  return %p
}
)";
  std::vector<Array> in = {random(DType::f32, {64, 64}, 1), random(DType::f32, {64, 64}, 2)};
  // 2 * 64^3 flops + 3 * 64^2 elements read and written.
  const int64_t work = 2 * 64 * 64 * 64 + 3 * 64 * 64;
  RunOptions o;
  o.max_work = work - 1;
  CHECK(contains(run_error(dot, in, o), "test.tsr:3:3: error: stopped after " + std::to_string(work - 1) +
                                            " units of work (--max-work"));
  o.max_work = work;
  CHECK_NOTHROW(run(dot, in, o));
  o.max_work = 0;
  CHECK_NOTHROW(run(dot, in, o));

  // Block copies count: per step, 1024 elements copied in, 1024 read by the
  // get, 2048 by the swap (the value stored, the old value returned) and
  // 1024 copied out; 8 steps make 40960. The pallas_call op counts as an op
  // too (its operand and result, 16384): 57344 in all.
  const char* copy = R"(
index_map @row(%i: i32) -> (i32, i32) {
  return %i, 0
}
kernel @k(%x: ref<f32[1,1024], vmem>, %o: ref<f32[1,1024], vmem>) {
  %v = get %x[:, :]
  swap %o[:, :], %v
}
func @main(%x: f32[8,1024]) -> f32[8,1024] {
  %out = pallas_call[kernel=@k, grid=(8), in_specs=[spec((1, 1024), @row)], out_specs=[spec((1, 1024), @row)],
                     out_shapes=[f32[8,1024]]] %x
  return %out
}
)";
  std::vector<Array> x = {random(DType::f32, {8, 1024}, 3)};
  o.max_work = 57343;
  std::string e = run_error(copy, x, o);
  CAPTURE(e);
  CHECK(contains(e, "test.tsr:10:3: error: stopped after 57343 units of work"));
  o.max_work = 16384 + 5120 * 4 + 1024;  // the get of step 4 goes past it
  CHECK(contains(run_error(copy, x, o), "(in kernel @k in iteration (4,))"));
  o.max_work = 57344;
  CHECK_NOTHROW(run(copy, x, o));
}

TEST_CASE("a type naming more than 2^63 elements is counted without overflow and fails to run, located") {
  CHECK(num_elements({int64_t{1} << 32, int64_t{1} << 32, int64_t{1} << 32}) == INT64_MAX);
  CHECK(saturating_mul(int64_t{1} << 62, 4) == INT64_MAX);
  CHECK(saturating_add(INT64_MAX, 1) == INT64_MAX);
  const char* text = R"(
func @main() -> f32[4294967296,4294967296,4294967296] {
  %p = broadcast_in_dim[shape=(4294967296, 4294967296, 4294967296), broadcast_dimensions=()] 0.0:f32
  %q = neg %p
  return %q
}
)";
  CHECK(contains(run_error(text, {}), "test.tsr:3:3: error: broadcast_in_dim: array shape (4294967296, 4294967296, "
                                      "4294967296) has more than 2^63 elements"));
}

// An endless loop ends: a run has a step limit unless told otherwise (the
// same default for RunOptions, `tessera run --max-steps` and tessera.run's
// max_steps), and the error says how to raise it in both.
TEST_CASE("step limit: on by default; an endless while stops with an error naming --max-steps and max_steps") {
  CHECK(RunOptions{}.max_steps == kDefaultMaxSteps);
  CHECK(kDefaultMaxSteps >= 10'000'000);  // every example and test takes under a million
  const char* text = R"(
func @main(%n: i32) -> i32 {
  %w = while[cond=fn(%k: i32) -> bool { %t = ge %k, 0
       return %t }, body=fn(%k: i32) -> i32 { %k2 = add %k, 1
       %k3 = rem %k2, 1000
       return %k3 }] %n
  return %w
}
)";
  RunOptions o;
  o.max_steps = 5000;
  std::string e = run_error(text, {Array::scalar(DType::i32, 0)}, o);
  CAPTURE(e);
  CHECK(contains(e, "error: stopped after 5000 steps (ops and grid iterations): an endless loop?"));
  CHECK(contains(e, "--max-steps N"));
  CHECK(contains(e, "max_steps=N"));
  CHECK(contains(e, "test.tsr:"));
}
