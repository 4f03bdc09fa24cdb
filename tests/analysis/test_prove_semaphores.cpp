// The protocol claims (semaphore balance with deadlocks across
// devices and cores, DMA races): every kernel of the zoo that uses DMAs or
// semaphores is proved, and the verdicts are unknown, never a false proof,
// where the model does not decide. The mutants that must be FAILED are one
// table in test_prove_mutants.cpp; random protocols against the interpreter
// are in test_prove_differential.cpp.
#include <doctest/doctest.h>

#include <map>
#include <random>

#include "protocol_test_util.h"

using namespace tessera;
using namespace tessera::prove;
using namespace tessera::prove::testing;


TEST_CASE("semaphore balance: the zoo's DMA and semaphore kernels are proved") {
  for (const char* name : {"dma_pipeline.tsr", "ring_allreduce.tsr"}) {
    Obligation o = balance(example_text(name));
    CHECK_MESSAGE(o.verdict == Verdict::proved, name << ": " << o.line());
    CHECK(o.method == "z3");
  }
  // dma_pipeline: 1 + 15 prefetches + 16 waits + 14 slot-reuse waits + 16 write-backs + 2 = 64 events.
  CHECK(balance(example_text("dma_pipeline.tsr")).detail == "64 semaphore events");
  CHECK(balance(kCoreMap).verdict == Verdict::proved);
  CHECK(balance(copy_kernel("  dma_start %x[:, :], %o[:, :], %sem\n  dma_wait %sem, %o[:, :]\n")).verdict == Verdict::proved);
  // A kernel without DMAs or semaphores: trivially balanced.
  Obligation m = balance(example_text("matmul.tsr"));
  CHECK(m.verdict == Verdict::proved);
  CHECK(m.method == "trivial");
}

TEST_CASE("semaphore balance: per grid point, symbolic in the grid") {
  auto kernel = [](const std::string& grid) {
    return R"(
index_map @rows(%i: i32) -> (i32, i32) { return %i, 0 }
kernel @k(%x: ref<f32[8,128], vmem>, %o: ref<f32[8,128], vmem>, %sem: ref<sem[2], semaphore>) {
  %i = program_id[axis=0]
  %p = rem %i, 2
  semaphore_signal %sem[%p], 1
  %v = get %x[:, :]
  swap %o[:, :], %v
  %last = eq %i, 5
  cond[branches=[fn(%p0: i32, %s0: ref<sem[2], semaphore>) { semaphore_wait %s0[%p0], 1 },
                 fn(%p1: i32, %s1: ref<sem[2], semaphore>) { }]] %last, %p, %sem
}
func @main(%x: f32[)" + grid + R"(]) -> f32[)" + grid + R"(] {
  %out = pallas_call[kernel=@k, grid=(G), in_specs=[spec((8, 128), @rows)], out_specs=[spec((8, 128), @rows)],
                     out_shapes=[f32[)" + grid + R"(]], scratch=[ref<sem[2], semaphore>], dimension_semantics=(arbitrary)] %x
  return %out
}
)";
  };
  // Step 5 skips its wait: sem[1] is left at 1 there, and no step leaves less than 0.
  for (int64_t g : {6, 4096}) {
    std::string text = kernel(std::to_string(8 * g) + ",128");
    text = replace_once(text, "grid=(G)", "grid=(" + std::to_string(g) + ")");
    Obligation o = balance(text);
    REQUIRE(o.verdict == Verdict::failed);
    CHECK(o.grid_points == std::vector<std::vector<int64_t>>{{5}});
    CHECK(o.queries == 2);
    CHECK(has(o.detail, "at grid point (5): %sem[1] is left at 1 when the step ends (semaphore_signal at <test>:6:3 +1; path: branch 1 of cond at "
                        "<test>:10:3): it is non-zero at kernel exit"));
  }
  std::string six = replace_once(kernel("48,128"), "grid=(G)", "grid=(6)");
  CHECK(has(run_error(six, {zeros(DType::f32, {48, 128})}), "Semaphore scratch \"sem\"[1] has non-zero count 1"));
  // Waiting in every step is balanced.
  CHECK(balance(replace_once(six, "%last = eq %i, 5", "%last = eq %i, 99")).verdict == Verdict::proved);
}

TEST_CASE("semaphore balance: counts handed from one step to the next are decided by running the grid in order") {
  // Step 0 signals, step 1 waits: the total is 0 but no single step is balanced.
  std::string carry = R"(
index_map @rows(%i: i32) -> (i32, i32) { return %i, 0 }
kernel @k(%x: ref<f32[8,128], vmem>, %o: ref<f32[8,128], vmem>, %sem: ref<sem, semaphore>) {
  %i = program_id[axis=0]
  %first = eq %i, 0
  cond[branches=[fn(%s0: ref<sem, semaphore>) { semaphore_wait %s0, 1 },
                 fn(%s1: ref<sem, semaphore>) { semaphore_signal %s1, 1 }]] %first, %sem
  %v = get %x[:, :]
  swap %o[:, :], %v
}
func @main(%x: f32[16,128]) -> f32[16,128] {
  %out = pallas_call[kernel=@k, grid=(2), in_specs=[spec((8, 128), @rows)], out_specs=[spec((8, 128), @rows)],
                     out_shapes=[f32[16,128]], scratch=[ref<sem, semaphore>], dimension_semantics=(arbitrary)] %x
  return %out
}
)";
  Obligation c = balance(carry);
  CHECK_MESSAGE(c.verdict == Verdict::proved, c.line());
  CHECK(run_error(carry, {zeros(DType::f32, {16, 128})}) == "");
  // A parallel axis: another order, or a core per position, runs the
  // waiting step first, from zero. The interpreter on 2 cores deadlocks.
  std::string carry_parallel = replace_once(carry, "dimension_semantics=(arbitrary)", "dimension_semantics=(parallel)");
  Obligation cp = balance(carry_parallel);
  CHECK(cp.verdict == Verdict::failed);
  CHECK(cp.detail == "counts are handed between parallel positions: running each position on a core of its own (as "
                     "another order of the parallel axes, or more cores, may), grid point (1) waits in semaphore_wait at "
                     "<test>:6:49 for 1 on %s0, which holds 0: it waits forever");
  CHECK(cp.grid_points == std::vector<std::vector<int64_t>>{{1}});
  {
    interp::RunOptions two;
    two.cores = 2;
    std::string e;
    try {
      interp::run_function(parse_verified(carry_parallel), "main", {zeros(DType::f32, {16, 128})}, two);
    } catch (const Error& err) {
      e = err.what();
    }
    CAPTURE(e);
    CHECK(has(e, "deadlock"));
  }
  // Each parallel position hands counts only between its own steps (signal
  // at j == 0, wait at j == 1): every order of the positions, on any number
  // of cores, runs to its end.
  std::string per_row = R"(
index_map @rows(%i: i32, %j: i32) -> (i32, i32) { return %i, %j }
kernel @k(%x: ref<f32[8,128], vmem>, %o: ref<f32[8,128], vmem>, %sem: ref<sem, semaphore>) {
  %j = program_id[axis=1]
  %first = eq %j, 0
  cond[branches=[fn(%s0: ref<sem, semaphore>) { semaphore_wait %s0, 1 },
                 fn(%s1: ref<sem, semaphore>) { semaphore_signal %s1, 1 }]] %first, %sem
  %v = get %x[:, :]
  swap %o[:, :], %v
}
func @main(%x: f32[16,256]) -> f32[16,256] {
  %out = pallas_call[kernel=@k, grid=(2, 2), in_specs=[spec((8, 128), @rows)], out_specs=[spec((8, 128), @rows)],
                     out_shapes=[f32[16,256]], scratch=[ref<sem, semaphore>], dimension_semantics=(parallel, arbitrary)] %x
  return %out
}
)";
  Obligation pr = balance(per_row);
  CHECK_MESSAGE(pr.verdict == Verdict::proved, pr.line());
  for (int cores : {1, 2}) {
    interp::RunOptions o;
    o.cores = cores;
    o.grid_seed = 3;
    CHECK_NOTHROW(interp::run_function(parse_verified(per_row), "main", {zeros(DType::f32, {16, 256})}, o));
  }
  // The parallel axis inner, the protocol along it: position (j = 0) only
  // signals, and (j = 1) only waits.
  Obligation inner = balance(replace_once(per_row, "dimension_semantics=(parallel, arbitrary)",
                                          "dimension_semantics=(arbitrary, parallel)"));
  CHECK(inner.verdict == Verdict::failed);
  CAPTURE(inner.detail);
  CHECK(has(inner.detail, "grid point (0, 1) waits in semaphore_wait"));
  // Signals and waits of one position across the outer arbitrary axis,
  // interleaved with the other positions' on one core: still proved.
  Obligation across = balance(replace_once(replace_once(per_row, "dimension_semantics=(parallel, arbitrary)",
                                                        "dimension_semantics=(arbitrary, parallel)"),
                                           "%j = program_id[axis=1]", "%j = program_id[axis=0]"));
  CHECK_MESSAGE(across.verdict == Verdict::proved, across.line());
  // Step 0 waits for what step 1 would signal: blocked for ever.
  std::string late = replace_once(carry, "%first = eq %i, 0", "%first = eq %i, 1");
  Obligation w = balance(late);
  REQUIRE(w.verdict == Verdict::failed);
  CHECK(w.grid_points == std::vector<std::vector<int64_t>>{{0}});
  CHECK(w.detail == "running the grid in order, the kernel blocks: it waits in semaphore_wait at <test>:6:49 at grid point (0) "
                    "for 1 on %s0, which holds 0: it waits forever");
  CHECK(has(run_error(late, {zeros(DType::f32, {16, 128})}), "deadlock"));
  // Two signals, one wait: 1 left at exit.
  std::string extra = replace_once(carry, "semaphore_signal %s1, 1", "semaphore_signal %s1, 2");
  Obligation e = balance(extra);
  REQUIRE(e.verdict == Verdict::failed);
  CHECK(e.detail == "running the grid in order, %s0 is left at 1 at kernel exit");
  CHECK(has(run_error(extra, {zeros(DType::f32, {16, 128})}), "non-zero count 1"));
  // A grid too large to run step by step stays unknown.
  std::string big = replace_once(carry, "grid=(2)", "grid=(300000)");
  for (int k = 0; k < 3; ++k) big = replace_once(big, "f32[16,128]", "f32[2400000,128]");
  Obligation b = balance(big);
  CHECK(b.verdict == Verdict::unknown);
  CHECK(has(b.detail, "counts are handed from one grid step to the next, and the grid is too large"));
  // A signal amount read from memory: never a false proof, and no counterexample.
  std::string data = copy_kernel(
      "  %n = get %o[0, 0]\n  %k = convert_element_type[new_dtype=i32] %n\n  semaphore_signal %sem2, %k\n  semaphore_wait %sem2, 1\n");
  data = replace_once(data, "%sem: ref<dma_sem, semaphore>) {", "%sem: ref<dma_sem, semaphore>, %sem2: ref<sem, semaphore>) {");
  data = replace_once(data, "scratch=[ref<dma_sem, semaphore>]", "scratch=[ref<dma_sem, semaphore>, ref<sem, semaphore>]");
  Obligation d = balance(data);
  CHECK(d.verdict == Verdict::unknown);
  CHECK(has(d.detail, "it depends on values the prover does not model"));
  // A loop whose trip count is a grid index: not unrolled.
  std::string loop = copy_kernel(
      "  %i = program_id[axis=0]\n  %n = add %i, 1\n"
      "  for[body=fn(%j: i32, %s: ref<dma_sem, semaphore>, %xx: ref<f32[16,128], any>, %oo: ref<f32[16,128], vmem>) {\n"
      "    dma_start %xx[:, :], %oo[:, :], %s\n    dma_wait %s, %oo[:, :]\n"
      "  }, num_consts=3] 0:i32, %n, %sem, %x, %o\n");
  Obligation l = balance(loop);
  CHECK(l.verdict == Verdict::unknown);
  CHECK(has(l.detail, "whose trip count is not static"));
}

TEST_CASE("DMA races: the zoo's DMA kernels") {
  Obligation d = races(example_text("dma_pipeline.tsr"));
  CHECK_MESSAGE(d.verdict == Verdict::proved, d.line());
  CHECK(d.detail == "32 DMAs");  // the first fetch, 15 prefetches, 16 write-backs
  CHECK(races(kCoreMap).verdict == Verdict::proved);
  CHECK(races(example_text("matmul.tsr")).method == "trivial");
  // ring_allreduce: the receiving side too (each receive semaphore gets one copy, waited before the slot is read).
  Obligation r = races(example_text("ring_allreduce.tsr"));
  CHECK_MESSAGE(r.verdict == Verdict::proved, r.line());
  // Reading the incoming slot before its wait: the interpreter reports a race on
  // the receiving device; the prover, which does not order devices by other
  // semaphores, says unknown (never proved).
  std::string peek = replace_once(example_text("ring_allreduce.tsr"), "        dma_wait %rs[%s], %b[%s1, :, :]\n",
                                  "        %peek = get %b[%s1, :, :]\n        dma_wait %rs[%s], %b[%s1, :, :]\n");
  Obligation p = races(peek);
  CHECK(p.verdict == Verdict::unknown);
  CHECK(has(p.detail, "get %b at <test>:57:9 (s=0) may touch what dma_start at <test>:56:9 (s=0) from device 0 writes"));
  CHECK(has(run_races(peek, {zeros(DType::f32, {4, 8, 128})}), "RACE DETECTED"));
}

TEST_CASE("DMA races: reads of a DMA destination the copy does not write, or after its wait") {
  // (Reading it before the wait is a mutant, test_prove_mutants.cpp; semaphore balance holds there.)
  std::string text = copy_kernel("  dma_start %x[:, :], %o[:, :], %sem\n  %v = get %o[0:8, :]\n  dma_wait %sem, %o[:, :]\n");
  CHECK(balance(text).verdict == Verdict::proved);
  std::string other = replace_once(text, "dma_start %x[:, :], %o[:, :], %sem", "dma_start %x[8:16, :], %o[8:16, :], %sem");
  other = replace_once(other, "dma_wait %sem, %o[:, :]", "dma_wait %sem, %o[8:16, :]");
  CHECK(races(other).verdict == Verdict::proved);
  CHECK(run_races(other, {zeros(DType::f32, {16, 128})}) == "");
  CHECK(races(copy_kernel("  dma_start %x[:, :], %o[:, :], %sem\n  dma_wait %sem, %o[:, :]\n  %v = get %o[0:8, :]\n")).verdict ==
        Verdict::proved);
}
TEST_CASE("DMA races: reading a DMA source while it is in flight") {
  std::string text = replace_once(kWriteSource, "swap %buf[3, :], 0.0", "%r = get %buf[3, :]");
  CHECK(races(text).verdict == Verdict::proved);
  CHECK(run_races(text, {zeros(DType::f32, {16, 128})}) == "");
}
TEST_CASE("DMA races: an over-approximated region is unknown, never FAILED") {
  // Rows 0 and 2 (a strided slice, taken as its hull [0, 2]) while row 1 is being written.
  std::string text = copy_kernel("  dma_start %x[1:2, :], %o[1:2, :], %sem\n  %v = get %o[ds(0, 2, 2), :]\n  dma_wait %sem, %o[1:2, :]\n");
  Obligation o = races(text);
  CHECK(o.verdict == Verdict::unknown);
  CHECK(has(o.detail, "a strided slice or the rows of a gather / scatter are over-approximated"));
  // (The interpreter's race detector compares hulls too, interpreter/tpu/races.cpp, and reports this.)
}

TEST_CASE("semaphore balance: a semaphore run_scoped allocates in every loop iteration is unknown") {
  // Iteration 0 signals its semaphore, iteration 1 waits on a fresh one: a
  // deadlock, which one symbol for both semaphores would call balanced.
  std::string text = R"(
kernel @k(%x: ref<f32[16,128], vmem>, %o: ref<f32[16,128], vmem>) {
  for[body=fn(%j: i32) {
    run_scoped[body=fn(%jj: i32, %s: ref<sem, semaphore>) {
      %first = eq %jj, 0
      cond[branches=[fn(%s0: ref<sem, semaphore>) { semaphore_wait %s0, 1 },
                     fn(%s1: ref<sem, semaphore>) { semaphore_signal %s1, 1 }]] %first, %s
    }] %j
  }, num_consts=0] 0:i32, 2:i32
  %v = get %x[:, :]
  swap %o[:, :], %v
}
func @main(%x: f32[16,128]) -> f32[16,128] {
  %out = pallas_call[kernel=@k, grid=(1), in_specs=[spec()], out_specs=[spec()], out_shapes=[f32[16,128]]] %x
  return %out
}
)";
  Obligation o = balance(text);
  CHECK(o.verdict == Verdict::unknown);
  CHECK(o.detail == "semaphore_wait at <test>:6:53 uses a semaphore that run_scoped allocates anew in every iteration of for at <test>:3:3");
  CHECK(has(run_error(text, {zeros(DType::f32, {16, 128})}), "deadlock"));
}

TEST_CASE("protocol claims on a gather / scatter kernel") {
  // The rows are data, which kernel bounds cannot decide; the protocol claims
  // rely only on its guards, and the regions they compare are dense.
  std::string text = example_text("sc_gather_scatter.tsr");
  std::vector<Obligation> obs = prove_text(text, Options{});
  CHECK(find(obs, "kernel", "bounds").verdict == Verdict::unknown);
  CHECK(find(obs, "kernel", "semaphore balance").verdict == Verdict::proved);
  CHECK(find(obs, "kernel", "DMA races").verdict == Verdict::proved);
  std::vector<interp::Array> in = {zeros(DType::i32, {64}), zeros(DType::i32, {64}), zeros(DType::f32, {256, 128}),
                                   zeros(DType::f32, {16, 128})};
  CHECK(run_races(text, in) == "");
}

TEST_CASE("DMA races: accesses in a loop without a static trip count") {
  // A loop of reads of an unrelated Ref is left out; of the DMA's destination, it makes the claim unknown.
  std::string body =
      "  dma_start %x[:, :], %o[:, :], %sem\n  dma_wait %sem, %o[:, :]\n"
      "  %i = program_id[axis=0]\n"
      "  for[body=fn(%j: i32, %r: ref<f32[16,128], REF>) {\n    %v = get %r[0, :]\n  }, num_consts=1] 0:i32, %i, %R\n";
  std::string unrelated = copy_kernel(replace_once(replace_once(body, "REF", "vmem"), "%R", "%buf"));
  unrelated = replace_once(unrelated, "%sem: ref<dma_sem, semaphore>) {", "%sem: ref<dma_sem, semaphore>, %buf: ref<f32[16,128], vmem>) {");
  unrelated = replace_once(unrelated, "scratch=[ref<dma_sem, semaphore>]", "scratch=[ref<dma_sem, semaphore>, ref<f32[16,128], vmem>]");
  Obligation u = races(unrelated);
  CHECK_MESSAGE(u.verdict == Verdict::proved, u.line());
  Obligation d = races(copy_kernel(replace_once(replace_once(body, "REF", "vmem"), "%R", "%o")));
  CHECK(d.verdict == Verdict::unknown);
  CHECK(has(d.detail, "get at <test>:6:5 sits in for at <test>:5:3, whose trip count is not static"));
}


TEST_CASE("deadlock across devices: a wait that needs a later signal of another device") {
  interp::Array x = zeros(DType::f32, {2, 8});
  // The order argument alone does not cover device 0's wait; running the protocol does.
  Obligation o = balance(kPingPong);
  CHECK_MESSAGE(o.verdict == Verdict::proved, o.line());
  CHECK(run_error(kPingPong, {x}) == "");
}

TEST_CASE("ring_allreduce with other neighbours") {
  interp::Array x = zeros(DType::f32, {4, 8, 128});
  std::string ring = example_text("ring_allreduce.tsr");
  // Sending to the left neighbour, (d - 1) mod 4, is a ring too (the other way): still balanced, no deadlock.
  std::string left = replace_once(ring, "  %right = rem %me_plus_1, 4\n", "  %me_minus_1 = add %me, 3\n  %right = rem %me_minus_1, 4\n");
  Obligation l = balance(left);
  CHECK_MESSAGE(l.verdict == Verdict::proved, l.line());
  CHECK(run_error(left, {x}) == "");
  // A self-signal in place of the left one: each device still gets two barrier signals.
  std::string self = replace_once(ring, "semaphore_signal %barrier, 1, %left", "semaphore_signal %barrier, 1, %me");
  CHECK(balance(self).verdict == Verdict::proved);
  CHECK(run_error(self, {x}) == "");
}


TEST_CASE("deadlock across the cores of a core_map") {
  std::vector<interp::Array> x = {zeros(DType::f32, {256, 128})};
  Obligation o = balance(kCoreToken);
  CHECK_MESSAGE(o.verdict == Verdict::proved, o.line());
  CHECK(run_error(kCoreToken, x) == "");
  // Waiting first, or signalling the wrong core: mutants, test_prove_mutants.cpp.
}

TEST_CASE("a signal to another core of a pallas_call is unknown") {
  // Correct only when program i runs on core i (--cores 2, grid order): the program does not fix that.
  std::string text = R"(
kernel @k(%o: ref<f32[8], vmem>, %s: ref<sem[2], semaphore>) {
  %c = program_id[axis=0]
  %other = sub 1, %c
  %me = axis_index[axis_name=dev]
  swap %o[:], 1.0
  semaphore_signal %s[%other], 1, %me, %other
  semaphore_wait %s[%c], 1
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
  Obligation o = balance(text);
  CHECK(o.verdict == Verdict::unknown);
  CHECK(o.detail == "semaphore_signal at <test>:7:3 signals another core's semaphore: which core runs a grid step depends on "
                    "--cores and the grid order, which the program does not fix");
}

TEST_CASE("deadlocks across devices in a grid of several steps: the whole grid is run in order") {
  // Every device waits for its neighbour's signal before sending its own, at
  // every step: each step is balanced, and no step can start.
  std::string both_wait = replace_once(kPingPong, "grid=(1)", "grid=(2)");
  both_wait = replace_once(both_wait, "scratch=[ref<sem, semaphore>]] %xs",
                           "scratch=[ref<sem, semaphore>], dimension_semantics=(arbitrary)] %xs");
  std::string ping = both_wait;
  both_wait = replace_once(both_wait, "%first = eq %d, 0", "%first = eq %d, 7");
  Obligation o = balance(both_wait);
  REQUIRE(o.verdict == Verdict::failed);
  CHECK(o.grid_points == std::vector<std::vector<int64_t>>{{0}});
  CHECK(has(o.detail, "running the grid in order, every device that has not finished is blocked: device 0 waits in "
                      "semaphore_wait at <test>:9:3 at grid point (0) for 1 on %s, which holds 0; device 1 waits in "
                      "semaphore_wait at <test>:9:3 at grid point (0) for 1 on %s, which holds 0: a deadlock across devices"));
  interp::Array x = zeros(DType::f32, {2, 8});
  CHECK(has(run_error(both_wait, {x}), "deadlock"));
  // The ping-pong over two steps in order: each wait is answered.
  Obligation p = balance(ping);
  CHECK_MESSAGE(p.verdict == Verdict::proved, p.line());
  CHECK(run_error(ping, {x}) == "");
  // With the axis parallel: each step is balanced and runs to its end on its
  // own, so every order the devices share does, on any number of cores.
  std::string parallel = replace_once(ping, "dimension_semantics=(arbitrary)", "dimension_semantics=(parallel)");
  Obligation pp = balance(parallel);
  CHECK_MESSAGE(pp.verdict == Verdict::proved, pp.line());
  check_runs_in_orders(parallel, {x}, {1, 2, 3});
  // One step whose devices both wait first: blocked on its own, so in every order.
  std::string stuck_one = replace_once(parallel, "%first = eq %d, 0", "%p = program_id[axis=0]\n  %q = mul %p, 7\n  %first = eq %d, %q");
  Obligation so = balance(stuck_one);
  CHECK(so.verdict == Verdict::failed);
  CHECK(has(so.detail, "at grid point (1)"));
  CHECK(has(run_error(stuck_one, {x}), "deadlock"));
}

// ---- protocols written for any device count (axis_size) ----

namespace {

// Device 0 starts a token round the ring; every other device waits for it,
// then passes it on; device 0 finally waits for it to come back. Correct for
// every ring size, but a wait needs a signal another device sends later in
// the program, which the proof for every count does not follow.
const std::string kTokenRing = R"(
kernel @k(%x: ref<f32[8], vmem>, %o: ref<f32[8], vmem>, %s: ref<sem, semaphore>) {
  %d = axis_index[axis_name=dev]
  %n = axis_size[axis_name=dev]
  %d1 = add %d, 1
  %next = rem %d1, %n
  %first = eq %d, 0
  cond[branches=[fn(%s0: ref<sem, semaphore>) {
    semaphore_wait %s0, 1
  }, fn(%s1: ref<sem, semaphore>) { }]] %first, %s
  semaphore_signal %s, 1, %next
  cond[branches=[fn(%s2: ref<sem, semaphore>) { }, fn(%s3: ref<sem, semaphore>) {
    semaphore_wait %s3, 1
  }]] %first, %s
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

// `text` with its pmap (and the leading dim of its input and output) of `n` devices instead of 4.
std::string with_devices(std::string text, int n) {
  text = replace_once(text, "axis_size=4", "axis_size=" + std::to_string(n));
  const std::string to = "f32[" + std::to_string(n) + ",8,128]";
  for (size_t at = text.find("f32[4,8,128]"); at != std::string::npos; at = text.find("f32[4,8,128]", at + to.size()))
    text.replace(at, 12, to);
  return text;
}

}  // namespace

TEST_CASE("semaphore balance for every device count: halo_exchange reads axis_size") {
  std::string halo = example_text("halo_exchange.tsr");
  Obligation o = balance(halo);
  CHECK_MESSAGE(o.verdict == Verdict::proved, o.line());
  CHECK(o.detail == "11 semaphore events, for every device count from 2 to 1048576 (the kernel reads axis_size of dev)");
  // The interpreter agrees on rings of several sizes.
  for (int n : {2, 3, 4, 7}) {
    CAPTURE(n);
    CHECK(run_error(with_devices(halo, n), {zeros(DType::f32, {n, 8, 128})}) == "");
  }
  // ring_allreduce with its neighbours from axis_size: its protocol (not its 4-slot sum) holds for every ring.
  std::string ring = replace_once(example_text("ring_allreduce.tsr"), "  %right = rem %me_plus_1, 4\n",
                                  "  %n = axis_size[axis_name=dev]\n  %right = rem %me_plus_1, %n\n");
  ring = replace_once(ring, "  %me_plus_3 = add %me, 3\n  %left = rem %me_plus_3, 4\n",
                      "  %n_minus_1 = sub %n, 1\n  %me_plus_3 = add %me, %n_minus_1\n  %left = rem %me_plus_3, %n\n");
  Obligation r = balance(ring);
  CHECK_MESSAGE(r.verdict == Verdict::proved, r.line());
  CHECK(has(r.detail, "for every device count from 2 to 1048576"));
}

TEST_CASE("semaphore balance for every device count: otherwise proved for the count given, saying why not for every one") {
  // A neighbour mod 4, whatever the ring's size: a permutation only when the size is 4.
  std::string halo = replace_once(example_text("halo_exchange.tsr"), "%right = rem %me_plus_1, %n", "%right = rem %me_plus_1, 4");
  Obligation o = balance(halo);
  CHECK_MESSAGE(o.verdict == Verdict::proved, o.line());
  CHECK(o.detail == "11 semaphore events; for the 4 devices given, not for every count (the kernel reads axis_size of dev): "
                    "the target of semaphore_signal at <test>:45:3 is not a permutation of the devices: with 2 devices, "
                    "device 1 would signal device 2");
  CHECK(run_error(halo, {zeros(DType::f32, {4, 8, 128})}) == "");
  // The reason holds up: on 8 devices the interpreter finds the deadlock.
  CHECK(has(run_error(with_devices(halo, 8), {zeros(DType::f32, {8, 8, 128})}), "Semaphore barrier semaphore of collective 0 has non-zero count"));
  // Devices 4 to 7 get no signal (left at -1), device 2 gets three (left at 1): either is a counterexample.
  std::string on8 = balance(with_devices(halo, 8)).detail;
  CHECK_MESSAGE((has(on8, "the barrier semaphore on device 4 is left at -1 when the step ends") ||
                 has(on8, "the barrier semaphore on device 2 is left at 1 when the step ends")),
                on8);
  // A neighbour beyond the ring for smaller sizes (and for 4: FAILED there).
  std::string beyond = replace_once(example_text("halo_exchange.tsr"), "%right = rem %me_plus_1, %n", "%right = rem %me_plus_1, 5");
  beyond = replace_once(beyond, "%left = rem %me_minus_1, %n", "%left = rem %me_minus_1, 5");
  Obligation b = balance(with_devices(beyond, 5));
  CHECK(b.verdict == Verdict::proved);
  CHECK_MESSAGE(has(b.detail, "; for the 5 devices given, not for every count (the kernel reads axis_size of dev): the target of "
                              "semaphore_signal at <test>:44:3 is not a permutation of the devices: with 2 devices, device 1 would "
                              "signal device 2"), b.detail);
  // Two devices on one target.
  std::string doubled = replace_once(example_text("halo_exchange.tsr"), "%me_plus_1 = add %me, 1", "%me_plus_1 = mul %me, 2");
  Obligation d = balance(doubled);
  CHECK(d.verdict == Verdict::failed);  // at 4 devices too: device 1 gets no barrier signal from the left
  CHECK(has(run_error(doubled, {zeros(DType::f32, {4, 8, 128})}), "error"));
  // A token ring: proved for 4 by running it; for every count, the order query does not cover it.
  Obligation t = balance(kTokenRing);
  CHECK_MESSAGE(t.verdict == Verdict::proved, t.line());
  CHECK_MESSAGE(has(t.detail, "; for the 4 devices given, not for every count (the kernel reads axis_size of dev): with 2 devices, "
                              "a wait on %s0 on device 1 may need a signal that another device sends later in the program"),
                t.detail);
  CHECK(run_error(kTokenRing, {zeros(DType::f32, {4, 8})}) == "");
}

TEST_CASE("semaphore balance for every core count of a core_map") {
  // Each core signals the next one round the mesh, then waits for the one before.
  std::string ring = replace_once(kCoreToken, "    %other = sub 1, %c\n",
                                  "    %n = axis_size[axis_name=core]\n    %c1 = add %c, 1\n    %other = rem %c1, %n\n");
  Obligation o = balance(ring);
  CHECK_MESSAGE(o.verdict == Verdict::proved, o.line());
  CHECK(o.detail == "2 semaphore events, for every core count from 2 to 1048576 (the kernel reads axis_size of core)");
  for (int n : {2, 3, 5}) {
    CAPTURE(n);
    CHECK(run_error(replace_once(ring, "mesh_shape=(2)", "mesh_shape=(" + std::to_string(n) + ")"),
                    {zeros(DType::f32, {256, 128})}) == "");
  }
}

TEST_CASE("semaphore balance with several process axes: nested pmaps, a mesh of two axes") {
  // Process ids are flat over the axes, the outermost major, as the interpreter numbers devices and cores.
  // Each core of a 2 x 3 mesh signals the next core of its row.
  const std::string mesh = R"(func @main(%x: ref<f32[256,128], hbm>) {
  core_map[body=fn(%hr: ref<f32[256,128], hbm>) {
    %a = axis_index[axis_name=row]
    %b = axis_index[axis_name=col]
    %b1 = add %b, 1
    %next = rem %b1, 3
    %base = mul %a, 3
    %target = add %base, %next
    %dev = device_id
    run_scoped[body=fn(%t: i32, %d: i32, %s: ref<sem, semaphore>) {
      semaphore_signal %s, 1, %d, %t
      semaphore_wait %s, 1
    }] %target, %dev
  }, mesh_axes=(row, col), mesh_shape=(2, 3)] %x
}
)";
  Obligation o = balance(mesh);
  CHECK_MESSAGE(o.verdict == Verdict::proved, o.line());
  CHECK(run_error(mesh, {zeros(DType::f32, {256, 128})}) == "");
  // The same target in every row: the cores of row 1 get no signal.
  std::string rowless = replace_once(mesh, "%target = add %base, %next", "%target = add %next, 0");
  Obligation r = balance(rowless);
  CHECK(r.verdict == Verdict::failed);
  CHECK(has(r.detail, "%s on core 3 is left at -1 when the step ends"));
  CHECK(has(run_error(rowless, {zeros(DType::f32, {256, 128})}),
            "device 0 core 3 waits for semaphore run_scoped \"s\" to reach 1 (it holds 0)"));
  // Three devices of two: each signals its partner in the inner pmap.
  const std::string nested = R"(kernel @k(%x: ref<f32[8], vmem>, %o: ref<f32[8], vmem>, %s: ref<sem, semaphore>) {
  %a = axis_index[axis_name=outer]
  %b = axis_index[axis_name=inner]
  %b1 = add %b, 1
  %next = rem %b1, 2
  %base = mul %a, 2
  %target = add %base, %next
  semaphore_signal %s, 1, %target
  semaphore_wait %s, 1
  %v = get %x[:]
  swap %o[:], %v
}
func @main(%x: f32[3,2,8]) -> f32[3,2,8] {
  %out = pmap[axis_name=outer, axis_size=3, in_axes=(0), out_axes=(0), body=fn(%xo: f32[2,8]) -> f32[2,8] {
    %in = pmap[axis_name=inner, axis_size=2, in_axes=(0), out_axes=(0), body=fn(%xs: f32[8]) -> f32[8] {
      %r = pallas_call[kernel=@k, grid=(1), in_specs=[spec()], out_specs=[spec()], out_shapes=[f32[8]],
                       scratch=[ref<sem, semaphore>]] %xs
      return %r
    }] %xo
    return %in
  }] %x
  return %out
}
)";
  Obligation n = balance(nested);
  CHECK_MESSAGE(n.verdict == Verdict::proved, n.line());
  CHECK(run_error(nested, {zeros(DType::f32, {3, 2, 8})}) == "");
  std::string outerless = replace_once(nested, "%target = add %base, %next", "%target = add %next, 0");
  Obligation b = balance(outerless);
  CHECK(b.verdict == Verdict::failed);
  CHECK(has(b.detail, "%s on device 2 is left at -1 when the step ends"));
  CHECK(has(run_error(outerless, {zeros(DType::f32, {3, 2, 8})}), "deadlock: every core is waiting"));
}

TEST_CASE("semaphore balance across the cores of a core_map inside a pmap: processes are (device, core) pairs") {
  // Each core signals its namesake on the other device.
  const std::string text = R"(func @main(%x: f32[2,8]) -> f32[2,8] {
  %out = pmap[axis_name=dev, axis_size=2, in_axes=(0), out_axes=(0), body=fn(%xs: f32[8]) -> f32[8] {
    %o = run_scoped[body=fn(%v: f32[8], %r: ref<f32[8], vmem>) -> f32[8] {
      swap %r[:], %v
      core_map[body=fn(%rr: ref<f32[8], vmem>) {
        %d = axis_index[axis_name=dev]
        %c = axis_index[axis_name=core]
        %d1 = add %d, 1
        %other = rem %d1, 2
        run_scoped[body=fn(%t: i32, %cc: i32, %s: ref<sem, semaphore>) {
          semaphore_signal %s, 1, %t, %cc
          semaphore_wait %s, 1
        }] %other, %c
      }, mesh_axes=(core), mesh_shape=(2)] %r
      %w = get %r[:]
      return %w
    }] %xs
    return %o
  }] %x
  return %out
}
)";
  interp::Array x = zeros(DType::f32, {2, 8});
  Obligation o = balance(text);
  CHECK_MESSAGE(o.verdict == Verdict::proved, o.line());
  CHECK(run_error(text, {x}) == "");
  // Every core signals core 0 of the other device: core 1 waits forever.
  std::string core0 = replace_once(text, "semaphore_signal %s, 1, %t, %cc", "semaphore_signal %s, 1, %t, 0");
  Obligation b = balance(core0);
  CHECK(b.verdict == Verdict::failed);
  CHECK(has(b.detail, "%s on device 0 core 1 is left at -1 when the step ends"));
  CHECK(has(run_error(core0, {x}), "device 0 core 1 waits for semaphore run_scoped \"s\" to reach 1 (it holds 0)"));
  // A core index outside the mesh reaches no core: FAILED, and a run-time error.
  std::string beyond = replace_once(text, "semaphore_signal %s, 1, %t, %cc", "semaphore_signal %s, 1, %t, 2");
  CHECK(balance(beyond).verdict == Verdict::failed);
  CHECK(has(run_error(beyond, {x}), "core index 2 is out of range"));
}

TEST_CASE("counts handed between grid steps across devices with a parallel axis: each position on every device from zero") {
  // Along the arbitrary axis, step 0 signals the other device and step 1 waits for its signal.
  const std::string text = R"(kernel @k(%x: ref<f32[8], vmem>, %o: ref<f32[8], vmem>, %s: ref<sem, semaphore>) {
  %d = axis_index[axis_name=dev]
  %other = sub 1, %d
  %j = program_id[axis=1]
  %first = eq %j, 0
  cond[branches=[fn(%s0: ref<sem, semaphore>, %t0: i32) {
    semaphore_wait %s0, 1
  }, fn(%s1: ref<sem, semaphore>, %t1: i32) {
    semaphore_signal %s1, 1, %t1
  }]] %first, %s, %other
  %a = get %x[:]
  swap %o[:], %a
}
func @main(%x: f32[2,8]) -> f32[2,8] {
  %out = pmap[axis_name=dev, axis_size=2, in_axes=(0), out_axes=(0), body=fn(%xs: f32[8]) -> f32[8] {
    %r = pallas_call[kernel=@k, grid=(2, 2), in_specs=[spec()], out_specs=[spec()], out_shapes=[f32[8]],
                     scratch=[ref<sem, semaphore>], dimension_semantics=(parallel, arbitrary)] %xs
    return %r
  }] %x
  return %out
}
)";
  interp::Array x = zeros(DType::f32, {2, 8});
  Obligation o = balance(text);
  CHECK_MESSAGE(o.verdict == Verdict::proved, o.line());
  check_runs_in_orders(text, {x});
  // Position 0 signals twice and position 1 waits twice: fine in order, not on cores of their own.
  std::string handed = replace_once(text, "%j = program_id[axis=1]", "%j = program_id[axis=0]");
  Obligation b = balance(handed);
  CHECK(b.verdict == Verdict::failed);
  CHECK(has(b.detail, "counts are handed between parallel positions: running each position on a core of its own"));
  CHECK(has(b.detail, "device 0 waits in semaphore_wait at <test>:7:5 at grid point (1, 0) for 1 on %s0, which holds 0"));
  CHECK(run_error(handed, {x}) == "");
  interp::RunOptions two;
  two.cores = 2;
  CHECK(has(error_of([&] { interp::run_function(parse_verified(handed), "main", {x}, two); }), "deadlock"));
}
