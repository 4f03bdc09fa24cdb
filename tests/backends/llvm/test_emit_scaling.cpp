// Emission scales with a kernel's length: `emit llvm` and `emit ptx` of one
// kernel whose 20,000 ops form a single elementwise chain (bench/gen_module.h)
// finish in bounded memory and time, on a thread with a small stack (the
// generators of a chain are evaluated recursively, so the lowering must bound
// their depth); and a chain long enough to be cut into buffers and to skip
// O3 computes what the interpreter computes. bench/bench_emit_llvm measures
// the rates.
//
// Skipped under the sanitizers: there the emission alone takes a minute, and
// the address-space limit below conflicts with ASan's shadow memory.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>

#include <pthread.h>
#include <sys/resource.h>

#include "backends/llvm/emit.h"
#include "backends/llvm/jit.h"
#include "bench/gen_module.h"
#include "interpreter/interpreter.h"
#include "ir/parser.h"
#include "tests/sanitized.h"
#include "verify/verify.h"

using namespace tessera;
namespace ll = tessera::backends::llvm_lowering;

namespace {

constexpr int64_t kChainOps = 20'000;
// Peak memory the emission of the chain may add (it needs about 60 MB; the
// quadratic lowering this guards against needed 24 GB). An address-space
// limit this far above the start makes that lowering fail in seconds instead.
constexpr long kMaxGrowthKb = 256 * 1024;
constexpr rlim_t kAddressHeadroom = rlim_t{2} << 30;
constexpr double kMaxSeconds = 30;
constexpr size_t kStackBytes = size_t{2} << 20;

long peak_rss_kb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

rlim_t address_space_bytes() {
  std::ifstream statm("/proc/self/statm");
  rlim_t pages = 0;
  statm >> pages;
  return pages * static_cast<rlim_t>(sysconf(_SC_PAGESIZE));
}

// Runs `f` on a fresh thread with a stack of kStackBytes; what it throws is
// reported as the returned message.
std::string on_small_stack(const std::function<void()>& f) {
  struct Job {
    const std::function<void()>* f;
    std::string error;
  } job{&f, ""};
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, kStackBytes);
  pthread_t thread;
  auto body = [](void* p) -> void* {
    auto* j = static_cast<Job*>(p);
    try {
      (*j->f)();
    } catch (const Error& e) {
      j->error = e.formatted();
    } catch (const std::exception& e) {
      j->error = e.what();
    }
    return nullptr;
  };
  REQUIRE(pthread_create(&thread, &attr, body, &job) == 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
  return job.error;
}

}  // namespace

TEST_CASE("a 20,000-op elementwise chain emits as llvm and ptx in bounded memory and time") {
  if (kSanitized) return;
  bench::GeneratedModule g = bench::generate_chain(kChainOps);
  Module m = parse_module(g.text, "chain.tsr");
  REQUIRE(verify_module(m).empty());
  rlimit old_limit{};
  getrlimit(RLIMIT_AS, &old_limit);
  rlimit limit = old_limit;
  limit.rlim_cur = std::min(old_limit.rlim_max, address_space_bytes() + kAddressHeadroom);
  setrlimit(RLIMIT_AS, &limit);
  for (const char* target : {"llvm", "ptx"}) {
    CAPTURE(target);
    long before = peak_rss_kb();
    auto start = std::chrono::steady_clock::now();
    size_t bytes = 0;
    std::string error = on_small_stack([&] {
      std::string text = std::string(target) == "llvm" ? ll::emit_llvm_text(m, *m.entry(), "nvptx", 80)
                                                       : ll::emit_ptx_text(m, *m.entry(), 80);
      bytes = text.size();
    });
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    CHECK(error == "");
    CHECK(bytes > 0);
    CHECK(peak_rss_kb() - before < kMaxGrowthKb);
    CHECK(seconds < kMaxSeconds);
  }
  setrlimit(RLIMIT_AS, &old_limit);
}

TEST_CASE("a chain cut into buffers, past O3's size bound, computes what the interpreter computes") {
  // 2,500 ops: the chain is cut into buffers 9 times (Lowering::kMaxChainDepth),
  // and its ops take the linear pipeline (kMaxO3Ops).
  bench::GeneratedModule g = bench::generate_chain(2'500);
  Module m = parse_module(g.text, "chain.tsr");
  REQUIRE(verify_module(m).empty());
  interp::Array x(DType::f32, {8, 128});
  for (int64_t i = 0; i < x.size(); ++i) x.set(i, static_cast<double>(i % 97) - 40.5);
  std::vector<interp::Array> expected = interp::run_function(m, "main", {x});
  ll::HostJit jit;
  std::vector<interp::Array> got = ll::run_function_jit(jit, m, "main", {x});
  REQUIRE(got.size() == 1);
  for (int64_t i = 0; i < x.size(); ++i) CHECK(got[0].get(i) == expected[0].get(i));
}

namespace {

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

}  // namespace

TEST_CASE("a kernel past O3's size bound calls libdevice's math once simplified, in element loops without runs") {
  // One kernel of 1,000 ops in 125 groups, each one element loop with a
  // `tanh`: the linear pipeline (kMaxO3Ops). libdevice's __nvvm_reflect
  // queries are answered and its tanhf simplified once; each group calls it
  // (one `.func` in the PTX) instead of holding a copy of its body. The
  // element loops take one element per thread and round: no inner loop of
  // kVectorRun, which the linear passes would neither unroll nor vectorize.
  // Together these halve the IR per op, which is what the passes, the
  // printer and NVPTX's instruction selection cost in proportion to.
  bench::GeneratedModule g = bench::generate_module(1'000);
  Module m = parse_module(g.text, "module.tsr");
  REQUIRE(verify_module(m).empty());
  std::string ir = ll::emit_llvm_text(m, *m.entry(), "nvptx", 80);
  CHECK(ir.find("tessera-linear-passes") != std::string::npos);
  CHECK(ir.find("__nvvm_reflect") == std::string::npos);
  CHECK(ir.find("fma.rn.ftz") == std::string::npos);  // __CUDA_FTZ is 0: no flush-to-zero variant
  CHECK(count(ir, "define dso_local float @__nv_tanhf(") == 1);
  CHECK(count(ir, "call float @__nv_tanhf(") == 125);
  CHECK(count(ir, "llvm.nvvm.ex2.approx") == 2);  // tanhf's body, once (and its declaration)
  CHECK(count(ir, "= phi i64") == 125);           // one loop per group, no run loop inside
  CHECK(count(ir, "@llvm.nvvm.barrier0()") - 1 <= 126);  // no barrier twice in a row (one is the declaration)
  // Instructions (indented lines): 3,420 here; 4,300 with run loops, 5,400
  // with the body inlined too.
  CHECK(count(ir, "\n  ") < 3'600);
  std::string ptx = ll::emit_ptx_text(m, *m.entry(), 80);
  CHECK(count(ptx, "__nv_tanhf(\n") == 1);  // one body (a declaration comes first)
  // Visible, not internal: NVPTX's instruction selection walks all uses of an
  // internal callee at each call, quadratic in the module's calls (100,000
  // ops: 12,500 calls, 80% of emit ptx).
  CHECK(count(ptx, ".visible .func  (.param .b32 func_retval0) __nv_tanhf(") == 1);
  CHECK(count(ptx, "call.uni") == 125);
}

TEST_CASE("a kernel past O3's size bound launches a thread per element of its largest block") {
  // Blocks of 2 x 128: without runs of kVectorRun each of 256 threads takes
  // one element; with them only 64 threads would have work.
  std::string text = bench::generate_module(1'000).text;
  for (auto [from, to] : {std::pair<std::string, std::string>{"8,128", "2,128"}, {"(8, 128)", "(2, 128)"}, {"[0:8", "[0:2"}, {"64,128", "16,128"}})
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) text.replace(at, from.size(), to);
  Module m = parse_module(text, "small_blocks.tsr");
  REQUIRE(verify_module(m).empty());
  std::string ir = ll::emit_llvm_text(m, *m.entry(), "nvptx", 80);
  CHECK(ir.find("tessera-linear-passes") != std::string::npos);
  CHECK(ir.find("!\"maxntidx\", i32 256}") != std::string::npos);
}
