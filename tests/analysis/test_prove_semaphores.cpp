// Issue 16, claim "semaphore balance": every kernel of the zoo that uses DMAs
// or semaphores is proved, and mutants (a wait removed, a wait before its
// start, a byte count changed, a barrier wait too small) are FAILED with a
// counterexample that the interpreter reproduces: the same semaphore left at
// the same count at kernel exit, or a deadlock at the same wait.
#include <doctest/doctest.h>

#include <map>
#include <random>

#include "prove_test_util.h"

using namespace tessera;
using namespace tessera::prove;
using namespace tessera::prove::testing;

namespace {

std::string run_error(const std::string& text, const std::vector<interp::Array>& inputs) {
  Module m = parse_verified(text);
  try {
    interp::run_function(m, "main", inputs);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

interp::Array zeros(DType d, const Shape& s) {
  int64_t n = 1;
  for (int64_t x : s) n *= x;
  return interp::Array::from_values(d, s, std::vector<double>(static_cast<size_t>(n), 0.0));
}

Obligation balance(const std::string& text) { return find(prove_text(text), "kernel", "semaphore balance"); }

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A one-step copy of x into the output block by DMA; `body` is the kernel body.
std::string copy_kernel(const std::string& body) {
  return "kernel @k(%x: ref<f32[16,128], any>, %o: ref<f32[16,128], vmem>, %sem: ref<dma_sem, semaphore>) {\n" + body +
         "}\n"
         "func @main(%x: f32[16,128]) -> f32[16,128] {\n"
         "  %out = pallas_call[kernel=@k, grid=(1), in_specs=[spec(mem=any)], out_specs=[spec()],\n"
         "                     out_shapes=[f32[16,128]], scratch=[ref<dma_sem, semaphore>]] %x\n"
         "  return %out\n}\n";
}

const std::string kCoreMap = R"(
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

}  // namespace

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

TEST_CASE("semaphore balance mutant: a wait removed (dma_pipeline)") {
  std::string text = replace_once(example_text("dma_pipeline.tsr"), "        dma_wait %is[%slot], %ib[%slot, :, :]\n", "");
  Obligation o = balance(text);
  REQUIRE(o.verdict == Verdict::failed);
  CHECK(o.grid_points == std::vector<std::vector<int64_t>>{{0}});
  // Chunks 0, 2, ..., 14 land in slot 0: 8 copies of 128x128 f32.
  CHECK(has(o.detail, "%in_sem[0] is left at 524288 when the step ends"));
  CHECK(has(o.detail, "(c=1; c=3; c=5; ... 7 iterations)"));
  // The path: the prefetch cond, taken for every chunk but the last.
  CHECK(has(o.detail, "; path: branch 1 of cond at <test>:45:9 (c=0; c=1; c=2; ... 15 iterations), branch 0 of cond at <test>:45:9 (c=15))"));
  CHECK(has(o.detail, "it is non-zero at kernel exit"));
  std::string err = run_error(text, {zeros(DType::f32, {2048, 128})});
  CHECK(has(err, "Semaphore scratch \"in_sem\"[0] has non-zero count 524288"));
}

TEST_CASE("semaphore balance mutant: a byte count changed (dma_pipeline)") {
  std::string text = replace_once(example_text("dma_pipeline.tsr"), "dma_wait %out_sem[1], %out_buf[1, :, :]",
                                  "dma_wait %out_sem[1], %out_buf[1, 0:64, :]");
  Obligation o = balance(text);
  REQUIRE(o.verdict == Verdict::failed);
  CHECK(has(o.detail, "%os[1] is left at 32768 when the step ends"));
  std::string err = run_error(text, {zeros(DType::f32, {2048, 128})});
  CHECK(has(err, "Semaphore scratch \"out_sem\"[1] has non-zero count 32768"));
}

TEST_CASE("semaphore balance mutant: a wait moved before its start") {
  std::string text = copy_kernel("  dma_wait %sem, %o[:, :]\n  dma_start %x[:, :], %o[:, :], %sem\n");
  Obligation o = balance(text);
  REQUIRE(o.verdict == Verdict::failed);
  CHECK(o.detail ==
        "at grid point (0): dma_wait at <test>:2:3 waits for 8192 bytes on %sem, but the step has 0 there before it "
        "(no signal on this path): it waits forever");
  std::string err = run_error(text, {zeros(DType::f32, {16, 128})});
  CHECK(has(err, "<test>:2:3: error: dma_wait: deadlock"));
  CHECK(has(err, "to reach 8192 (it holds 0)"));
  // The same in a core_map.
  std::string cm = replace_once(kCoreMap, "      dma_start %r[ds(%row0, 128), :], %buf[:, :], %sem\n      dma_wait %sem, %buf[:, :]\n",
                                "      dma_wait %sem, %buf[:, :]\n      dma_start %r[ds(%row0, 128), :], %buf[:, :], %sem\n");
  Obligation c = balance(cm);
  CHECK(c.verdict == Verdict::failed);
  CHECK(has(c.detail, "waits for 65536 bytes on %sem, but the step has 0 there before it"));
}

TEST_CASE("semaphore balance mutant: ring_allreduce") {
  interp::Array x = zeros(DType::f32, {4, 8, 128});
  // The receive wait removed: each device's last receive semaphore keeps 4096 bytes.
  std::string no_recv = replace_once(example_text("ring_allreduce.tsr"), "        dma_wait %rs[%s], %b[%s1, :, :]\n", "");
  Obligation o = balance(no_recv);
  REQUIRE(o.verdict == Verdict::failed);
  CHECK(has(o.detail, "on device "));
  CHECK(has(o.detail, "is left at 4096 when the step ends"));
  CHECK(has(run_error(no_recv, {x}), "has non-zero count 4096"));
  // The barrier waits for one neighbour only: the other's signal is left over.
  std::string barrier = replace_once(example_text("ring_allreduce.tsr"), "semaphore_wait %barrier, 2", "semaphore_wait %barrier, 1");
  Obligation b = balance(barrier);
  REQUIRE(b.verdict == Verdict::failed);
  CHECK(has(b.detail, "the barrier semaphore on device "));
  CHECK(has(b.detail, "is left at 1 when the step ends"));
  CHECK(has(run_error(barrier, {x}), "Semaphore barrier semaphore of collective 0 has non-zero count 1"));
  // Waiting for three: more than the two neighbours signal.
  Obligation three = balance(replace_once(example_text("ring_allreduce.tsr"), "semaphore_wait %barrier, 2", "semaphore_wait %barrier, 3"));
  CHECK(three.verdict == Verdict::failed);
  CHECK(has(three.detail, "is left at -1 when the step ends"));
  CHECK(has(three.detail, "a wait takes more than is ever signalled, so it waits forever"));
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

TEST_CASE("semaphore balance: unknown where counts carry across steps or depend on data") {
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
  CHECK(c.verdict == Verdict::unknown);
  CHECK(has(c.detail, "counts handed from one grid step to the next are not modelled"));
  CHECK(run_error(carry, {zeros(DType::f32, {16, 128})}) == "");
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

namespace {

// Random kernels of semaphore_signal / semaphore_wait on a ref<sem[2]>, some
// under a `cond` on the grid index, some in a `for` loop, over grids of 1 to 4
// steps. The reference is the interpreter's run: a deadlock or a semaphore
// left non-zero at kernel exit is a broken protocol.
class SemGen {
 public:
  explicit SemGen(uint32_t seed) : rng_(seed) {}
  int64_t pick(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng_); }

  // One signal or wait on `sem` at an element from `elems`; mostly a signal
  // and its matching wait, so that balanced protocols are common.
  std::string op(const std::string& sem, const std::vector<std::string>& elems) {
    auto elem = [&] { return elems[pick(0, static_cast<int64_t>(elems.size()) - 1)]; };
    std::string e = elem(), n = std::to_string(pick(1, 2));
    if (pick(0, 9) < 7) return "semaphore_signal " + sem + "[" + e + "], " + n + "\n  semaphore_wait " + sem + "[" + e + "], " + n + "\n";
    return std::string(pick(0, 1) ? "semaphore_signal " : "semaphore_wait ") + sem + "[" + e + "], " + n + "\n";
  }
  std::string stmts(int n, const std::string& sem, const std::vector<std::string>& elems, int depth) {
    std::string s;
    for (int k = 0; k < n; ++k) {
      int kind = depth > 0 ? 0 : static_cast<int>(pick(0, 3));
      std::string id = std::to_string(next_++);
      if (kind <= 1) {
        s += "  " + op(sem, elems);
      } else if (kind == 2) {
        // cond on the grid index: branch 1 runs when the comparison holds.
        s += "  %c" + id + " = " + (pick(0, 1) ? "eq" : "lt") + " %i, " + std::to_string(pick(0, 3)) + "\n";
        std::string inner = stmts(static_cast<int>(pick(1, 2)), "%s" + id, {"0", "1", "%p" + id}, depth + 1);
        s += "  cond[branches=[fn(%s0_" + id + ": ref<sem[2], semaphore>, %q0_" + id + ": i32) { }, fn(%s" + id +
             ": ref<sem[2], semaphore>, %p" + id + ": i32) {\n" + inner + "  }]] %c" + id + ", " + sem + ", %p\n";
      } else {
        std::string inner = "  %r" + id + " = rem %j" + id + ", 2\n" +
                            stmts(static_cast<int>(pick(1, 2)), "%s" + id, {"0", "%r" + id, "%p" + id}, depth + 1);
        s += "  for[body=fn(%j" + id + ": i32, %s" + id + ": ref<sem[2], semaphore>, %p" + id + ": i32) {\n" + inner +
             "  }, num_consts=2] 0:i32, " + std::to_string(pick(1, 3)) + ":i32, " + sem + ", %p\n";
      }
    }
    return s;
  }
  std::string program(int64_t grid) {
    std::string body = stmts(static_cast<int>(pick(2, 4)), "%sem", {"0", "1", "%p"}, 0);
    std::string rows = std::to_string(8 * grid);
    return "index_map @rows(%i: i32) -> (i32, i32) { return %i, 0 }\n"
           "kernel @k(%x: ref<f32[8,128], vmem>, %o: ref<f32[8,128], vmem>, %sem: ref<sem[2], semaphore>) {\n"
           "  %i = program_id[axis=0]\n  %p = rem %i, 2\n" + body +
           "  %v = get %x[:, :]\n  swap %o[:, :], %v\n}\n"
           "func @main(%x: f32[" + rows + ",128]) -> f32[" + rows + ",128] {\n"
           "  %out = pallas_call[kernel=@k, grid=(" + std::to_string(grid) + "), in_specs=[spec((8, 128), @rows)],\n"
           "    out_specs=[spec((8, 128), @rows)], out_shapes=[f32[" + rows + ",128]], scratch=[ref<sem[2], semaphore>],\n"
           "    dimension_semantics=(arbitrary)] %x\n  return %out\n}\n";
  }

 private:
  std::mt19937 rng_;
  int next_ = 0;
};

}  // namespace

TEST_CASE("semaphore balance: verdicts agree with the interpreter on random protocols") {
  std::map<std::string, int> seen;
  for (uint32_t seed = 0; seed < 150; ++seed) {
    SemGen gen(seed);
    int64_t grid = gen.pick(1, 4);
    std::string text = gen.program(grid);
    CAPTURE(text);
    Obligation o = balance(text);
    std::string err = run_error(text, {zeros(DType::f32, {8 * grid, 128})});
    bool broken = has(err, "non-zero count") || has(err, "deadlock");
    CHECK_MESSAGE((err.empty() || broken), err);
    if (o.verdict == Verdict::proved) CHECK_MESSAGE(!broken, o.line() << "\n" << err);
    if (o.verdict == Verdict::failed) CHECK_MESSAGE(broken, o.line());
    ++seen[std::string(verdict_name(o.verdict)) + (broken ? " broken" : " ok")];
  }
  MESSAGE("verdict / run: " << [&] {
    std::string s;
    for (const auto& [k, n] : seen) s += k + " " + std::to_string(n) + "; ";
    return s;
  }());
  // The campaign reaches both verdicts, and most programs get one.
  CHECK(seen["proved ok"] >= 30);
  CHECK(seen["FAILED broken"] >= 30);
  CHECK(seen["unknown ok"] + seen["unknown broken"] <= 40);
}

namespace {

Obligation races(const std::string& text) { return find(prove_text(text), "kernel", "DMA races"); }

std::string run_races(const std::string& text, const std::vector<interp::Array>& inputs) {
  Module m = parse_verified(text);
  interp::RunOptions opts;
  opts.detect_races = true;
  try {
    interp::run_function(m, "main", inputs, opts);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

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

TEST_CASE("DMA races mutant: a read of a DMA destination before its wait") {
  std::string text = copy_kernel("  dma_start %x[:, :], %o[:, :], %sem\n  %v = get %o[0:8, :]\n  dma_wait %sem, %o[:, :]\n");
  Obligation o = races(text);
  REQUIRE(o.verdict == Verdict::failed);
  CHECK(o.detail ==
        "at grid point (0): get %o at <test>:3:3 reads it while dma_start at <test>:2:3 is in flight writing %o, before the "
        "wait on %sem that completes the copy, and the regions overlap");
  CHECK(balance(text).verdict == Verdict::proved);
  std::string err = run_races(text, {zeros(DType::f32, {16, 128})});
  CHECK(has(err, "RACE DETECTED"));
  CHECK(has(err, "by DMA 0 of dma_start on device 0 core 0 at <test>:2:3"));
  CHECK(has(err, "by get on device 0 core 0 at <test>:3:3"));
  // Rows the copy does not write are free to read; after the wait, all of them.
  std::string other = replace_once(text, "dma_start %x[:, :], %o[:, :], %sem", "dma_start %x[8:16, :], %o[8:16, :], %sem");
  other = replace_once(other, "dma_wait %sem, %o[:, :]", "dma_wait %sem, %o[8:16, :]");
  CHECK(races(other).verdict == Verdict::proved);
  CHECK(run_races(other, {zeros(DType::f32, {16, 128})}) == "");
  CHECK(races(copy_kernel("  dma_start %x[:, :], %o[:, :], %sem\n  dma_wait %sem, %o[:, :]\n  %v = get %o[0:8, :]\n")).verdict ==
        Verdict::proved);
}

TEST_CASE("DMA races mutant: a write of a DMA source before its wait") {
  std::string text = R"(
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
  Obligation o = races(text);
  REQUIRE(o.verdict == Verdict::failed);
  CHECK(has(o.detail, "swap %buf at <test>:6:3 writes it while dma_start at <test>:5:3 is in flight reading %buf"));
  CHECK(has(run_races(text, {zeros(DType::f32, {16, 128})}), "RACE DETECTED"));
  // Reading the source meanwhile is fine.
  CHECK(races(replace_once(text, "swap %buf[3, :], 0.0", "%r = get %buf[3, :]")).verdict == Verdict::proved);
}

TEST_CASE("DMA races mutant: dma_pipeline prefetching into the slot in use") {
  std::string text = replace_once(example_text("dma_pipeline.tsr"), "%ib1[%other, :, :], %is1[%other]", "%ib1[%s1, :, :], %is1[%other]");
  Obligation o = races(text);
  REQUIRE(o.verdict == Verdict::failed);
  CHECK(has(o.detail, "the copy of dma_start at <test>:52:13 (c=0) writes %ib1 while dma_start at <test>:34:3 is in flight writing %in_buf"));
  CHECK(has(run_races(text, {zeros(DType::f32, {2048, 128})}), "RACE DETECTED"));
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
  // Scattering the gathered rows before the gather's wait: the scatter's copy
  // reads %rows while the gather writes it.
  std::string early = replace_once(text,
                                   "    dma_wait %sem, %rows[:, :]\n    dma_start[add=true] %rows[:, :], %o[%bag_of, :], %sem\n",
                                   "    dma_start[add=true] %rows[:, :], %o[%bag_of, :], %sem\n    dma_wait %sem, %rows[:, :]\n");
  Obligation o = races(early);
  REQUIRE(o.verdict == Verdict::failed);
  CHECK(has(o.detail, "the copy of dma_start at <test>:32:5 reads %rows while dma_start at <test>:31:5 is in flight writing %rows"));
  std::vector<interp::Array> in = {zeros(DType::i32, {64}), zeros(DType::i32, {64}), zeros(DType::f32, {256, 128}),
                                   zeros(DType::f32, {16, 128})};
  CHECK(run_races(text, in) == "");
  CHECK(has(run_races(early, in), "RACE DETECTED"));
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

namespace {

// Two devices hand a token back and forth: device 0 signals device 1, which
// waits for it and replies; device 0 waits for the reply. Device 0's wait
// needs a signal device 1 sends later in the program.
const std::string kPingPong = R"(
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

}  // namespace

TEST_CASE("deadlock across devices: ring_allreduce's barrier waiting before it signals") {
  interp::Array x = zeros(DType::f32, {4, 8, 128});
  std::string text = replace_once(example_text("ring_allreduce.tsr"),
                                  "  semaphore_signal %barrier, 1, %left\n  semaphore_signal %barrier, 1, %right\n  semaphore_wait %barrier, 2\n",
                                  "  semaphore_wait %barrier, 2\n  semaphore_signal %barrier, 1, %left\n  semaphore_signal %barrier, 1, %right\n");
  Obligation o = balance(text);
  REQUIRE(o.verdict == Verdict::failed);
  CHECK(o.grid_points == std::vector<std::vector<int64_t>>{{0}});
  CHECK(has(o.detail, "at grid point (0), every device that has not finished is blocked: device 0 waits in semaphore_wait at "
                      "<test>:44:3 for 2 on the barrier semaphore, which holds 0; device 1 waits"));
  CHECK(has(o.detail, ": a deadlock across devices"));
  std::string err = run_error(text, {x});
  CHECK(has(err, "deadlock: every core is waiting and none can proceed"));
  CHECK(has(err, "device 0 core 0 waits for semaphore barrier semaphore of collective 0 to reach 2 (it holds 0) in semaphore_wait at <test>:44:3"));
}

TEST_CASE("deadlock across devices: a wait that needs a later signal of another device") {
  interp::Array x = zeros(DType::f32, {2, 8});
  // The order argument alone does not cover device 0's wait; running the protocol does.
  Obligation o = balance(kPingPong);
  CHECK_MESSAGE(o.verdict == Verdict::proved, o.line());
  CHECK(run_error(kPingPong, {x}) == "");
  // Device 0 replies before device 1 has signalled: both wait first.
  std::string both = replace_once(kPingPong, "  }]] %first, %s, %other\n  semaphore_wait %s, 1\n", "  }]] %first, %s, %other\n");
  both = replace_once(both, "  %a = get %x[:]\n", "  semaphore_wait %s, 1\n  %a = get %x[:]\n");
  both = replace_once(both, "fn(%s1: ref<sem, semaphore>, %t1: i32) {\n    semaphore_signal %s1, 1, %t1\n  }",
                      "fn(%s1: ref<sem, semaphore>, %t1: i32) {\n    semaphore_wait %s1, 1\n    semaphore_signal %s1, 1, %t1\n  }");
  both = replace_once(both, "  semaphore_wait %s, 1\n  %a = get %x[:]\n", "  %a = get %x[:]\n");
  both = replace_once(both, "fn(%s2: ref<sem, semaphore>, %t2: i32) {\n    semaphore_signal %s2, 1, %t2\n  }",
                      "fn(%s2: ref<sem, semaphore>, %t2: i32) {\n    semaphore_wait %s2, 1\n    semaphore_signal %s2, 1, %t2\n  }");
  Obligation b = balance(both);
  REQUIRE(b.verdict == Verdict::failed);
  CHECK(has(b.detail, "device 0 waits in semaphore_wait at <test>:7:5 for 1 on %s1, which holds 0; "
                      "device 1 waits in semaphore_wait at <test>:11:5 for 1 on %s2, which holds 0 (device 0 took branch 1 of cond at <test>:6:3): "
                      "a deadlock across devices"));
  std::string err = run_error(both, {x});
  CHECK(has(err, "deadlock: every core is waiting and none can proceed"));
  CHECK(has(err, "device 0 core 0 waits for semaphore scratch \"s\" to reach 1 (it holds 0) in semaphore_wait at <test>:7:5"));
  CHECK(has(err, "device 1 waits for semaphore scratch \"s\" to reach 1 (it holds 0) in semaphore_wait at <test>:11:5"));
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
  // The wrong neighbour: (d + 1) mod 3 on 4 devices. Device 3's neighbours send it one barrier signal, not two.
  std::string wrong = replace_once(ring, "%right = rem %me_plus_1, 4", "%right = rem %me_plus_1, 3");
  Obligation w = balance(wrong);
  REQUIRE(w.verdict == Verdict::failed);
  CHECK(has(w.detail, "the barrier semaphore on device 3 is left at -1 when the step ends"));
  CHECK(has(w.detail, "a wait takes more than is ever signalled, so it waits forever"));
  // The interpreter stops at the first semaphore it finds wrong: device 1 gets three barrier signals.
  CHECK(has(run_error(wrong, {x}), "Semaphore barrier semaphore of collective 0 has non-zero count 1 for device 1"));
}

namespace {

// The two cores of a core_map hand each other a token: each signals the
// other core's semaphore, then waits for the other's signal.
const std::string kCoreToken = R"(
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

}  // namespace

TEST_CASE("deadlock across the cores of a core_map") {
  std::vector<interp::Array> x = {zeros(DType::f32, {256, 128})};
  Obligation o = balance(kCoreToken);
  CHECK_MESSAGE(o.verdict == Verdict::proved, o.line());
  CHECK(run_error(kCoreToken, x) == "");
  // Both wait first.
  std::string dead = replace_once(kCoreToken, "      semaphore_signal %s, 1, %d, %o\n      semaphore_wait %s, 1\n",
                                  "      semaphore_wait %s, 1\n      semaphore_signal %s, 1, %d, %o\n");
  Obligation d = balance(dead);
  REQUIRE(d.verdict == Verdict::failed);
  CHECK(d.detail ==
        "every core that has not finished is blocked: core 0 waits in semaphore_wait at <test>:8:7 for 1 on %s, which holds 0; "
        "core 1 waits in semaphore_wait at <test>:8:7 for 1 on %s, which holds 0: a deadlock across cores");
  std::string err = run_error(dead, x);
  CHECK(has(err, "device 0 core 0 waits for semaphore run_scoped \"s\" to reach 1 (it holds 0) in semaphore_wait at <test>:8:7"));
  CHECK(has(err, "device 0 core 1 waits for semaphore run_scoped \"s\" to reach 1 (it holds 0)"));
  // The wrong core: both signal core 0, so core 1 waits for ever.
  std::string wrong = replace_once(kCoreToken, "semaphore_signal %s, 1, %d, %o", "semaphore_signal %s, 1, %d, 0");
  Obligation w = balance(wrong);
  REQUIRE(w.verdict == Verdict::failed);
  CHECK(has(w.detail, "on core "));
  CHECK(has(run_error(wrong, x), "device 0 core 1 waits for semaphore run_scoped \"s\" to reach 1 (it holds 0)"));
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
