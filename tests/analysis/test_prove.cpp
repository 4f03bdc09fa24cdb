// tessera prove: the zoo is fully proved, plus unit tests of the pieces
// (intervals, assumptions, the brute-force reference, reports, solver limits).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "analysis/prove/int_encoder.h"
#include "analysis/prove/interval.h"
#include "interpreter/inputs.h"
#include "ir/primitive.h"
#include "prove_test_util.h"

using namespace tessera;
using namespace tessera::prove;
using namespace tessera::prove::testing;

TEST_CASE("every example of the zoo is fully proved") {
  // The zoo's files: every claim of each must be proved.
  const char* zoo[] = {"add", "matmul", "softmax", "layernorm", "flash_attention", "cumsum",
                       "row_sum", "gather_rows", "dma_pipeline", "ring_allreduce", "halo_exchange"};
  for (const char* name : zoo) {
    std::filesystem::path path = example_path(std::string(name) + ".tsr");
    CAPTURE(path);
    REQUIRE(std::filesystem::exists(path));
    std::string text = read_file(path);
    Options opts;
    opts.assumptions = assumptions_in_source(text);
    // gather_rows reads table rows idx[i]: its declared range is the table's row count.
    if (std::string(name) == "gather_rows" && opts.assumptions.empty())
      opts.assumptions.push_back(parse_assumption("idx in [0, 1024)"));
    std::vector<Obligation> obs = prove_text(text, opts);
    CAPTURE(lines(obs));
    CHECK(obs.size() >= 3);
    for (const Obligation& o : obs) {
      CHECK_MESSAGE(o.verdict == Verdict::proved, o.line());
      CHECK_MESSAGE(o.millis < 1000.0, o.line() << " took " << o.millis << " ms");
    }
    CHECK(exit_code(obs) == 0);
  }
}

TEST_CASE("every example in examples/ proves without failures") {
  // Files beyond the fixed zoo: nothing may FAIL (unknown is allowed for them).
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(examples_dir())) {
    if (entry.path().extension() != ".tsr") continue;
    ++files;
    std::string text = read_file(entry.path().string());
    Options opts;
    opts.assumptions = assumptions_in_source(text);
    if (entry.path().stem() == "gather_rows" && opts.assumptions.empty())
      opts.assumptions.push_back(parse_assumption("idx in [0, 1024)"));
    std::vector<Obligation> obs = prove_text(text, opts);
    for (const Obligation& o : obs) CHECK_MESSAGE(o.verdict != Verdict::failed, entry.path().string() << ": " << o.line());
  }
  CHECK(files >= 10);
}

TEST_CASE("intervals") {
  Interval a{-3, 7}, b{2, 4};
  CHECK((a + b).lo == -1);
  CHECK((a + b).hi == 11);
  CHECK((a * b).lo == -12);
  CHECK((a * b).hi == 28);
  CHECK(trunc_div(a, b).lo == -1);  // -3 / 2 rounds toward zero
  CHECK(trunc_div(a, b).hi == 3);
  CHECK(trunc_rem(a, b).lo == -3);
  CHECK(trunc_rem(a, b).hi == 3);
  CHECK(trunc_rem(Interval{0, 100}, Interval::of(8)).hi == 7);
  CHECK(!(Interval::top() * Interval::of(2)).bounded());
  CHECK(abs(Interval{-5, 2}).hi == 5);
  // Every pair of small intervals: the interval of a result contains every concrete result.
  for (int64_t lo = -4; lo <= 4; ++lo)
    for (int64_t hi = lo; hi <= 4; ++hi)
      for (int64_t dlo = -3; dlo <= 3; ++dlo)
        for (int64_t dhi = dlo; dhi <= 3; ++dhi)
          for (int64_t x = lo; x <= hi; ++x)
            for (int64_t y = dlo; y <= dhi; ++y) {
              Interval X{lo, hi}, Y{dlo, dhi};
              CHECK((X * Y).contains(x * y));
              CHECK((X - Y).contains(x - y));
              if (y != 0) {
                CHECK(trunc_div(X, Y).contains(x / y));
                CHECK(trunc_rem(X, Y).contains(x % y));
              }
            }
}

TEST_CASE("assumptions parse and are found in source comments") {
  Assumption a = parse_assumption("idx in [0, 1024)");
  CHECK(a.name == "idx");
  CHECK(a.lo == 0);
  CHECK(a.hi == 1024);
  Assumption b = parse_assumption("n in [-2, 5]");
  CHECK(b.lo == -2);
  CHECK(b.hi == 6);
  CHECK_THROWS_WITH_AS(parse_assumption("idx in 0..3"), doctest::Contains("expected '['"), Error);
  CHECK_THROWS_WITH_AS(parse_assumption("idx in [5, 5)"), doctest::Contains("empty"), Error);
  CHECK_THROWS_AS(parse_assumption("in [0, 1)"), Error);
  auto found = assumptions_in_source("# hello\n  # prove: assume idx in [0, 16)\n// prove: assume n in [1, 8]\nfunc @f() {}\n");
  REQUIRE(found.size() == 2);
  CHECK(found[0].name == "idx");
  CHECK(found[1].hi == 9);
}

TEST_CASE("the brute-force reference (the interpreter) follows the IR's integer semantics") {
  Module m = parse_verified(R"(
index_map @m(%i: i32, %j: i32, %s: ref<i32[4], smem>) -> (i32, i32, i32, i32, i32) {
  %a = div %i, %j
  %b = rem %i, %j
  %c = mul %i, 1073741824
  %r = get %s[%j]
  %lt = lt %i, %j
  %sel = select_n %lt, %a, %r
  return %a, %b, %c, %r, %sel
}
kernel @k(%s: ref<i32[4], smem>, %x: ref<f32[8], vmem>, %o: ref<f32[8], vmem>) {
  %v = get %x[:]
  swap %o[:], %v
}
func @main(%s: i32[4], %x: f32[8]) -> f32[8] {
  %out = pallas_call[kernel=@k, grid=(1, 1), num_scalar_prefetch=1, in_specs=[spec((8), fn(%i: i32, %j: i32, %t: ref<i32[4], smem>) -> i32 { return 0 })],
                     out_specs=[spec((8), fn(%i: i32, %j: i32, %t: ref<i32[4], smem>) -> i32 { return 0 })], out_shapes=[f32[8]]] %s, %x
  return %out
}
)");
  interp::Array s = interp::Array::from_values(DType::i32, {4}, {10, 20, 30, 40});
  std::vector<int64_t> r = block_at(m, "m", {-7, 2}, {s});
  CHECK(r[0] == -3);  // toward zero
  CHECK(r[1] == -1);  // sign of the dividend
  CHECK(r[2] == 1073741824);  // -7 * 2^30 wraps to 2^30 in i32
  CHECK(r[3] == 30);
  CHECK(r[4] == 30);  // -7 < 2: true picks case 1
  CHECK(block_at(m, "m", {5, 2}, {s})[4] == 2);
  // The interpreter defines x / 0 = -1 and x % 0 = x; the prover is stricter
  // and fails an obligation whose index map may divide by zero.
  CHECK(block_at(m, "m", {5, 0}, {s})[0] == -1);
  CHECK(block_at(m, "m", {5, 0}, {s})[1] == 5);
  CHECK_THROWS_WITH_AS(block_at(m, "m", {5, 4}, {s}), doctest::Contains("Out-of-bounds read of smem buffer of scalar prefetch 0"), Error);
}

TEST_CASE("JSON report, exit codes and SMT-LIB2 files") {
  std::string text = example_text("matmul.tsr");
  Options opts;
  opts.use_intervals = false;  // every obligation goes to Z3 and writes a file
  opts.smt2_dir = (std::filesystem::temp_directory_path() / "tessera_prove_smt2_test").string();
  std::filesystem::remove_all(opts.smt2_dir);
  std::vector<Obligation> obs = prove_text(text, opts);
  for (const Obligation& o : obs) CHECK_MESSAGE(o.verdict == Verdict::proved, o.line());
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(opts.smt2_dir)) {
    ++files;
    std::string q = read_file(e.path().string());
    CHECK(q.find("(check-sat)") != std::string::npos);
  }
  CHECK(files >= 5);
  std::string json = to_json(obs);
  CHECK(json.find("\"verdict\": \"proved\"") != std::string::npos);
  CHECK(json.find("\"exit_code\": 0") != std::string::npos);
  CHECK(find(obs, "out[0]", "non-revisiting").line() == "matmul out[0] non-revisiting: proved");
  Obligation f = obs[0];
  f.verdict = Verdict::unknown;
  CHECK(exit_code({obs[0], f}) == 3);
  f.verdict = Verdict::failed;
  CHECK(exit_code({f, obs[0]}) == 1);
  CHECK(exit_code({}) == 0);
}

TEST_CASE("a solver limit gives unknown, never a hang") {
  // A non-linear index map (i * j * k with symbolic factors) that Z3 cannot
  // settle within a tiny resource limit.
  std::string text = R"(
index_map @cube(%i: i32, %j: i32) -> i32 {
  %a = mul %i, %i
  %b = mul %a, %i
  %c = mul %j, %j
  %d = mul %c, %j
  %e = sub %b, %d
  %f = mul %e, %e
  %g = rem %f, 7
  %h = add %g, %i
  return %h
}
kernel @k(%x: ref<f32[1], vmem>, %o: ref<f32[1], vmem>) {
  %v = get %x[:]
  swap %o[:], %v
}
func @main(%x: f32[100000]) -> f32[100000] {
  %out = pallas_call[kernel=@k, grid=(?, ?), in_specs=[spec((1), @cube)], out_specs=[spec((1), @cube)],
                     out_shapes=[f32[100000]], dimension_semantics=(parallel, arbitrary)] %n, %n, %x
  return %out
}
)";
  // Dynamic grid sizes are operands: wrap the call in a function that has them.
  size_t at = text.find("func @main(%x");
  text.replace(at, std::string("func @main(%x").size(), "func @main(%n: i32, %x");
  Options opts;
  opts.rlimit = 2000;
  opts.timeout_ms = 2000;
  opts.assumptions = {parse_assumption("n in [1, 40)")};
  std::vector<Obligation> obs = prove_text(text, opts);
  CAPTURE(lines(obs));
  bool some_unknown = false;
  for (const Obligation& o : obs) {
    if (o.subject == "kernel") continue;
    CHECK(o.millis < 5000.0);
    if (o.verdict == Verdict::unknown) {
      some_unknown = true;
      CHECK(o.detail == "(resource limit rlimit=2000 reached)");
    }
  }
  CHECK(some_unknown);
  CHECK(exit_code(obs) != 0);
}

TEST_CASE("an assumption naming nothing is an error") {
  std::string text = example_text("add.tsr");
  Options opts;
  opts.assumptions = {parse_assumption("nope in [0, 1)")};
  CHECK_THROWS_WITH_AS(prove_text(text, opts), doctest::Contains("no scalar prefetch operand or dynamic grid size"), Error);
}

TEST_CASE("prove rules: every elementwise op on integers is modelled; everything else is opaque by design") {
  const auto& rules = tessera::prove::IntEncoder::rules();
  CHECK(rules.pass() == "prove");
  std::set<std::string> modelled_elsewhere;
  std::string opaque;
  for (const Primitive* p : registry().all()) {
    bool modelled = rules.find(*p) != nullptr;
    if (p->family == Family::elementwise && p->accepts != DTypeClass::floating) {
      CHECK_MESSAGE(modelled, p->name << " computes on integers but has no prove rule");
    } else if (modelled && p->family != Family::elementwise) {
      modelled_elsewhere.insert(p->name);
    }
    if (!modelled) opaque += " " + p->name;
  }
  // Where the kernel runs, scalar-prefetch reads and hints; the rest of the
  // state, structural, reduction and control primitives produce arrays or
  // bodies, never a scalar index the prover could follow: their results are
  // opaque ("not modelled"), which a proof may still be sound over.
  CHECK(modelled_elsewhere == std::set<std::string>{"axis_index", "axis_size", "get", "multiple_of", "num_programs", "program_id"});
  MESSAGE("opaque to the prover:" << opaque);
}

// A masked store whose window reaches past its Ref where the mask is off:
// the interpreter touches only the lanes on the mask, so no run fails, and
// the prover, which does not model the mask, must not say FAILED. The same
// store without its mask is FAILED, and the interpreter stops on it.
TEST_CASE("kernel bounds of a masked load or store reaching past its Ref: unknown, never FAILED; unmasked: FAILED") {
  const std::string text = R"(kernel @k(%s: ref<i32[1], smem>, %x: ref<f32[8,128], vmem>, %o: ref<f32[8,128], vmem>) {
  %r0 = get %s[0]
  swap %o[:, :], 0.0
  %r = iota[dtype=i32, shape=(8, 128), dimension=0]
  %gr = add %r, %r0
  %m = lt %gr, 8
  %v = load %x[ds(%r0, 8), :], %m, 0.0:f32
  store %o[ds(%r0, 8), :], %v, %m
}
func @main(%s: i32[1], %x: f32[8,128]) -> f32[8,128] {
  %out = pallas_call[kernel=@k, grid=(1), num_scalar_prefetch=1, in_specs=[spec()], out_specs=[spec()],
                     out_shapes=[f32[8,128]]] %s, %x
  return %out
}
)";
  Options o;
  o.assumptions = {parse_assumption("s in [0, 8]")};
  Obligation masked = find(prove_text(text, o), "kernel", "bounds");
  CHECK_MESSAGE(masked.verdict == Verdict::unknown, masked.line());
  CHECK_HAS(masked.detail, "the mask of load at <test>:7:3");
  interp::Array x = interp::random_array(ArrayType{DType::f32, {8, 128}}, 3);
  Module m = parse_verified(text);
  for (double start : {0.0, 3.0, 8.0}) {
    CAPTURE(start);
    interp::Array s = interp::Array::from_values(DType::i32, {1}, {start});
    CHECK_NOTHROW(interp::run_function(m, "main", {s, x}, {}));
  }
  const std::string unmasked = replace_once(replace_once(text, "load %x[ds(%r0, 8), :], %m, 0.0:f32", "get %x[ds(%r0, 8), :]"),
                                            "store %o[ds(%r0, 8), :], %v, %m", "swap %o[ds(%r0, 8), :], %v");
  Obligation plain = find(prove_text(unmasked, o), "kernel", "bounds");
  CHECK_MESSAGE(plain.verdict == Verdict::failed, plain.line());
  interp::Array s3 = interp::Array::from_values(DType::i32, {1}, {3.0});
  CHECK_THROWS(interp::run_function(parse_verified(unmasked), "main", {s3, x}, {}));
}

TEST_CASE("kernel bounds of a DMA with a dynamic size: 0 <= n and start + n <= dim, proved or a counterexample") {
  // Copies the first n rows (n from scalar prefetch) of x into the output block.
  const std::string text = R"(kernel @k(%n_ref: ref<i32[1], smem>, %x: ref<f32[16,128], any>, %o: ref<f32[16,128], vmem>,
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
  auto bounds = [&](const std::string& t, const std::vector<Assumption>& assume) {
    Options o;
    o.assumptions = assume;
    return find(prove_text(t, o), "kernel", "bounds");
  };
  // With n declared in [0, 16] every region fits.
  Obligation ok = bounds(text, {parse_assumption("n in [0, 16]")});
  CHECK_MESSAGE(ok.verdict == Verdict::proved, ok.line());
  // One row too many: the counterexample shows the start and the size.
  Obligation big = bounds(text, {parse_assumption("n in [0, 17]")});
  CHECK_MESSAGE(big.verdict == Verdict::failed, big.line());
  CHECK_HAS(big.detail, "dma_start %x at <test>:5:3: slice of dynamic size outside [0, 16) in dimension 0 of ref<f32[16,128], any>");
  CHECK_HAS(big.detail, "(slice start 0, size 17)");
  // Nothing known about n: a negative size is a counterexample too.
  Obligation any = bounds(text, {});
  CHECK_MESSAGE(any.verdict == Verdict::failed, any.line());
  CHECK_HAS(any.detail, "negative dynamic slice size in dimension 0");
  // A bound check in the kernel proves it without assumptions (`n = min(max(n, 0), 16)`)...
  const std::string clamped = replace_once(text, "  %n = get %n_ref[0]\n",
                                           "  %n0 = get %n_ref[0]\n  %n1 = max %n0, 0\n  %n = min %n1, 16\n");
  Obligation c = bounds(clamped, {});
  CHECK_MESSAGE(c.verdict == Verdict::proved, c.line());
  // ...and only the upper bound leaves the negative sizes.
  const std::string upper = replace_once(text, "  %n = get %n_ref[0]\n", "  %n0 = get %n_ref[0]\n  %n = min %n0, 16\n");
  Obligation u = bounds(upper, {});
  CHECK_MESSAGE(u.verdict == Verdict::failed, u.line());
  CHECK_HAS(u.detail, "negative dynamic slice size");
  // A dynamic start plus a dynamic size: the sum is what must fit.
  const std::string both = replace_once(replace_once(text, "%x[ds(0, %n), :]", "%x[ds(%n, %n), :]"), "  %n = get %n_ref[0]\n",
                                        "  %n0 = get %n_ref[0]\n  %n1 = max %n0, 0\n  %n = min %n1, 9\n");
  Obligation b = bounds(both, {});
  CHECK_MESSAGE(b.verdict == Verdict::failed, b.line());
  CHECK_HAS(b.detail, "(slice start 9, size 9)");
  Obligation b8 = bounds(replace_once(both, "min %n1, 9", "min %n1, 8"), {});
  CHECK_MESSAGE(b8.verdict == Verdict::proved, b8.line());
}
