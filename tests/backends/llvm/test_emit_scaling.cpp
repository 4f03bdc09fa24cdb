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

TEST_CASE("a kernel past O3's size bound gets libdevice's math folded and inlined, as O3 would") {
  // One kernel of 1,000 ops with 125 `tanh` calls: the linear pipeline
  // (kMaxO3Ops). libdevice's __nvvm_reflect queries are answered before its
  // bodies are inlined, so neither the queries nor the flush-to-zero variants
  // they select between are copied into every call site, and no `.func`
  // remains in the PTX.
  bench::GeneratedModule g = bench::generate_module(1'000);
  Module m = parse_module(g.text, "module.tsr");
  REQUIRE(verify_module(m).empty());
  std::string ir = ll::emit_llvm_text(m, *m.entry(), "nvptx", 80);
  CHECK(ir.find("tessera-linear-passes") != std::string::npos);
  CHECK(ir.find("__nvvm_reflect") == std::string::npos);
  CHECK(ir.find("fma.rn.ftz") == std::string::npos);  // __CUDA_FTZ is 0: no flush-to-zero variant
  CHECK(ir.find("@__nv_tanhf") == std::string::npos);
  CHECK(ir.find("llvm.nvvm.ex2.approx") != std::string::npos);  // tanhf's body, inlined
  std::string ptx = ll::emit_ptx_text(m, *m.entry(), 80);
  CHECK(ptx.find(".func") == std::string::npos);
  CHECK(ptx.find("\tcall") == std::string::npos);
}
