// Every program of the repository under the interpreter and under the host
// JIT: the .tsr files of tests/ and examples/ whose @main parses, verifies
// and takes arrays. Each must end in one of two ways: the same outputs, or
// the JIT refusing with a located error (a kernel it cannot lower). The
// interpreter's run-time errors must come back from the JIT word for word
// (its checks hand the call back to the interpreter: backends/llvm/run_checks.h).
// No third outcome: no silent difference, no run where the interpreter fails.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>

#include "backends/llvm/jit.h"
#include "backends/llvm/run_checks.h"
#include "interpreter/inputs.h"
#include "ir/parser.h"
#include "tests/test_util.h"
#include "verify/verify.h"

using namespace tessera;
using namespace tessera::backends::llvm_lowering;
using interp::Array;
using testing::examples_dir;
using testing::read_file;

namespace {

// Files with a runnable @main: parsed, verified, array parameters only.
std::optional<Module> runnable(const std::filesystem::path& file) {
  try {
    Module m = parse_module(read_file(file), file.filename().string());
    if (!verify_module(m).empty()) return std::nullopt;
    BodyPtr f = m.entry("main");
    if (!f) return std::nullopt;
    for (const Var* p : f->params())
      if (p->type.is_ref()) return std::nullopt;
    return m;
  } catch (const Error&) {
    return std::nullopt;
  }
}

// Both NaN, or equal within `tol` of the larger magnitude (libm and the
// interpreter's math functions may differ in the last ulp).
bool same(double got, double want, double tol) {
  if (got == want || (std::isnan(got) && std::isnan(want))) return true;
  if (!std::isfinite(got) || !std::isfinite(want)) return false;
  return std::fabs(got - want) <= tol * std::max({std::fabs(want), std::fabs(got), 1.0});
}

double tolerance(DType d) {
  if (d == DType::bf16) return 0x1p-7;
  if (d == DType::f16) return 0x1p-10;
  return is_float(d) ? 1e-4 : 0;
}

std::string first_difference(const std::vector<Array>& got, const std::vector<Array>& want) {
  if (got.size() != want.size()) return "different output counts";
  for (size_t o = 0; o < got.size(); ++o) {
    if (got[o].dtype() != want[o].dtype() || got[o].shape() != want[o].shape())
      return "output " + std::to_string(o) + ": different type";
    for (int64_t i = 0; i < want[o].size(); ++i)
      if (!same(got[o].get(i), want[o].get(i), tolerance(want[o].dtype())))
        return "output " + std::to_string(o) + " element " + std::to_string(i) + ": jit " + std::to_string(got[o].get(i)) +
               ", interpreter " + std::to_string(want[o].get(i));
  }
  return "";
}

}  // namespace

TEST_CASE("jit vs interpreter: every test kernel and example gives the same numbers, the same error, or a located refusal") {
  std::filesystem::path root = examples_dir().parent_path();
  std::vector<std::filesystem::path> files;
  for (const char* dir : {"examples", "tests"})
    for (const auto& e : std::filesystem::recursive_directory_iterator(root / dir))
      if (e.is_regular_file() && e.path().extension() == ".tsr") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::map<std::string, int> outcomes;
  for (const auto& file : files) {
    std::optional<Module> m = runnable(file);
    if (!m) {
      ++outcomes["not runnable (parse / verify / Ref parameters)"];
      continue;
    }
    std::string name = std::filesystem::relative(file, root).string();
    INFO(name);
    std::vector<Array> in;
    BodyPtr f = m->entry("main");
    for (size_t i = 0; i < f->params().size(); ++i)
      in.push_back(interp::random_array(f->params()[i]->type.array_type(), 7919 * (i + 1)));
    interp::RunOptions o;
    o.max_steps = 2'000'000;
    std::vector<Array> want, got;
    std::optional<Error> interp_error, jit_error;
    try {
      want = interp::run_function(*m, "main", in, o);
    } catch (const Error& e) {
      interp_error = e;
    }
    if (interp_error && interp_error->message().find("--max-steps") != std::string::npos) {
      ++outcomes["too long for the interpreter here"];
      continue;
    }
    // A HostJit per module: kernels are cached by the module's address.
    HostJit jit(JitOptions{2, false});
    try {
      got = run_function_jit(jit, *m, "main", in, o);
    } catch (const Error& e) {
      jit_error = e;
    }
    if (interp_error && jit_error) {
      // A refusal at compile time comes before the interpreter's run-time error.
      bool refused = jit_error->loc().line > 0 && jit_error->message().rfind("llvm: ", 0) == 0;
      if (!refused) CHECK(jit_error->formatted() == interp_error->formatted());
      ++outcomes[refused ? "refused by the jit (the interpreter fails too)" : "same error"];
    } else if (jit_error) {
      bool located = jit_error->loc().line > 0;
      CHECK_MESSAGE(located, "the jit failed without a location where the interpreter ran: " << jit_error->formatted());
      ++outcomes["refused by the jit"];
    } else if (interp_error) {
      FAIL_CHECK("the jit ran where the interpreter failed with: " << interp_error->formatted());
    } else {
      std::string diff = first_difference(got, want);
      CHECK_MESSAGE(diff.empty(), diff);
      ++outcomes["same outputs"];
    }
  }
  for (const auto& [what, n] : outcomes) MESSAGE(what << ": " << n);
  CHECK(outcomes["same outputs"] >= 40);
}

// HostJit::run itself (no interpreter behind it) reports the check record in
// the interpreter's words.
TEST_CASE("jit: a failed run-time check throws CheckFailure naming the kernel, operand, grid point and index") {
  std::filesystem::path checks = examples_dir().parent_path() / "tests/backends/llvm/checks";
  auto first_call = [](const Module& m) -> const Op& {
    for (const Op& op : m.entry("main")->ops())
      if (op.name() == "pallas_call") return op;
    FAIL("no pallas_call");
    throw;
  };
  Module block = parse_module(read_file(checks / "oob_block.tsr"), "oob_block.tsr");
  HostJit jit;
  std::vector<Array> x = {interp::random_array(Type::array(DType::f32, {16, 128}).array_type(), 1)};
  try {
    jit.run(block, first_call(block), x);
    FAIL("no CheckFailure");
  } catch (const CheckFailure& e) {
    CHECK(e.formatted() ==
          "oob_block.tsr:15:3: error: Out-of-bounds block index (2, 0) for input \"x\" in iteration (1,): reading "
          "[16:24, 0:128] but input has shape (16, 128) (kernel @k)");
  }
  Module smem = parse_module(read_file(checks / "oob_smem.tsr"), "oob_smem.tsr");
  std::vector<Array> tx = {interp::random_array(Type::array(DType::i32, {4}).array_type(), 1), x[0]};
  CHECK_THROWS_AS(jit.run(smem, first_call(smem), tx), CheckFailure);
}
