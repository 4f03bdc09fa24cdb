// Property test: the verifier, the prover, the interpreter and discharge agree
// on random small pallas_calls (program_gen.h makes them). Per program:
//
// 1. It parses and verifies, or fails with a located tessera::Error; if it
//    verifies, `prove` and every run succeed or throw a tessera::Error (no
//    other exception, no crash).
// 2. What `prove` proves holds at run time, under --oob raise and race
//    detection, on 1 and 2 cores and several grid seeds: a run-time error is
//    mapped to the claim it breaks (bounds of a mapping, non-revisiting,
//    parallel safety, kernel bounds), which must not be proved. A program run
//    without errors whose parallel-safety claims are proved computes the same
//    outputs, bitwise, on every core count and grid order (uninitialized
//    memory reads as zero).
// 3. Where the program is race-free (parallel safety proved) and reads no
//    uninitialized memory, `discharge,dce` computes the outputs of the
//    stateful program (bitwise on integers, to 1e-5 on floats).
//
// A failure prints the program (its own reproducer: assumptions are in its
// text) and its seed. Knobs for longer campaigns:
//   TESSERA_PROPERTY_CASES=N   programs (default 60; 12 under ASan)
//   TESSERA_PROPERTY_SEED=S    the first program's seed (program k has S + k)
//   TESSERA_PROPERTY_SKIP=aliases,stale_state
//                              do not generate these features (GenFeatures' member
//                              names), to look past a known bug; off by default
//   TESSERA_PROPERTY_DUMP=DIR  write every failing program to DIR/<seed>.tsr
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <typeinfo>

#include "analysis/prove/prove.h"
#include "interpreter/inputs.h"
#include "interpreter/interpreter.h"
#include "ir/parser.h"
#include "program_gen.h"
#include "robustness_util.h"
#include "transforms/pass.h"
#include "verify/verify.h"

using namespace tessera;
using namespace tessera::robustness;

namespace {

GenFeatures features_from_env() {
  // TESSERA_PROPERTY_SKIP names the features a campaign leaves out.
  static const std::map<std::string, bool GenFeatures::*> kFeatures = {
      {"element_dims", &GenFeatures::element_dims},   {"prefetch_writes", &GenFeatures::prefetch_writes},
      {"i64_math", &GenFeatures::i64_math},           {"multiple_of", &GenFeatures::multiple_of},
      {"aliases", &GenFeatures::aliases},             {"stale_state", &GenFeatures::stale_state},
      {"dynamic_grid", &GenFeatures::dynamic_grid},   {"input_writes", &GenFeatures::input_writes},
      {"bounded_dims", &GenFeatures::bounded_dims},   {"masked_overhang", &GenFeatures::masked_overhang},
  };
  GenFeatures f;
  const char* skip = std::getenv("TESSERA_PROPERTY_SKIP");
  std::stringstream ss(skip ? skip : "");
  for (std::string item; std::getline(ss, item, ',');) {
    auto it = kFeatures.find(item);
    if (it != kFeatures.end()) f.*(it->second) = false;
    else if (!item.empty()) FAIL("TESSERA_PROPERTY_SKIP: unknown feature '" << item << "'");
  }
  return f;
}

// One configuration of the simulator a program runs under.
struct RunConfig {
  int cores = 1;
  std::optional<uint64_t> grid_seed;
  std::string flags() const {
    std::string s = "--cores " + std::to_string(cores);
    if (grid_seed) s += " --grid-seed " + std::to_string(*grid_seed);
    return s;
  }
};

interp::RunOptions options(const RunConfig& c, interp::RunOptions::Uninit uninit) {
  interp::RunOptions o;
  o.oob = interp::RunOptions::Oob::raise;
  o.uninit = uninit;
  o.detect_races = true;
  o.cores = c.cores;
  o.grid_seed = c.grid_seed;
  o.max_steps = 100'000;
  return o;
}

struct RunResult {
  std::vector<interp::Array> outputs;
  std::string error;  // "" when the run succeeded
};

// `a` against the reference `b` wherever `defined` (the reference's elements
// that do not depend on what uninitialized memory holds): bitwise on
// integers, to `tol` on floats. -1 if they agree, else the first flat index.
int64_t first_difference(const interp::Array& a, const interp::Array& b, const std::vector<bool>& defined, double tol) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return 0;
  for (int64_t i = 0; i < a.size(); ++i) {
    if (!defined[static_cast<size_t>(i)]) continue;
    double x = a.get(i), y = b.get(i);
    if (!is_float(a.dtype())) {
      if (x != y) return i;
      continue;
    }
    if (std::isnan(x) || std::isnan(y)) {
      if (std::isnan(x) != std::isnan(y)) return i;
      continue;
    }
    if (std::fabs(x - y) > tol * std::max(1.0, std::fabs(y))) return i;
  }
  return -1;
}

// The claim a run-time error breaks: {subject, kind} as prove names them;
// kind "parallel" for a race. nullopt: not a claim of prove's.
std::optional<std::pair<std::string, std::string>> claim_of(const std::string& msg) {
  static const std::regex mapping(R"((input|output) "([xo])(\d+)\")");
  auto subject = [&](const std::string& m) -> std::string {
    std::smatch sm;
    if (!std::regex_search(m, sm, mapping)) return "";
    return std::string(sm[1] == "input" ? "in[" : "out[") + sm[3].str() + "]";
  };
  if (msg.find("RACE DETECTED") != std::string::npos) return std::make_pair(std::string("*"), std::string("parallel"));
  if (msg.find("Revisited block") != std::string::npos) return std::make_pair(subject(msg), std::string("non-revisiting"));
  if (msg.find("deadlock:") != std::string::npos || msg.find("has non-zero count") != std::string::npos)
    return std::make_pair(std::string("kernel"), std::string("semaphore balance"));
  if (msg.find("(in kernel @") != std::string::npos) return std::make_pair(std::string("kernel"), std::string("bounds"));
  if (msg.find("Out-of-bounds block index") != std::string::npos || msg.find("(in index map @") != std::string::npos ||
      msg.find("the index map of") != std::string::npos) {
    size_t at = msg.find("(in index map @");
    return std::make_pair(subject(at == std::string::npos ? msg : msg.substr(at)), std::string("bounds"));
  }
  return std::nullopt;
}

class PropertyRun {
 public:
  std::map<std::string, int> counts;    // what the campaign saw
  std::map<std::string, int> failures;  // failure classes
  std::string dump_dir;

  void check_program(uint64_t seed, const GenProgram& g);

 private:
  void fail(uint64_t seed, const GenProgram& g, const std::string& cls, const std::string& what);
  RunResult run(const Module& m, const std::vector<interp::Array>& in, const interp::RunOptions& o, uint64_t seed,
                const GenProgram& g);
};

void PropertyRun::fail(uint64_t seed, const GenProgram& g, const std::string& cls, const std::string& what) {
  ++failures[cls];
  std::string features;
  for (const std::string& n : g.notes) features += (features.empty() ? "" : ", ") + n;
  std::string report = "[" + cls + "] " + what + "\nprogram seed " + std::to_string(seed) + " (TESSERA_PROPERTY_SEED=" +
                       std::to_string(seed) + " TESSERA_PROPERTY_CASES=1; inputs: tessera run --random-inputs " +
                       std::to_string(seed) + " --uninit zero --detect-races), features: " + features + "\n" + g.text;
  FAIL_CHECK(report);
  if (!dump_dir.empty()) {
    // The program's first failure, and one line per failure in failures.txt.
    std::filesystem::create_directories(dump_dir);
    std::string path = dump_dir + "/" + std::to_string(seed) + ".tsr";
    if (!std::filesystem::exists(path))
      std::ofstream(path) << "# " << std::regex_replace(report.substr(0, report.find("\nprogram seed")), std::regex("\n"), "\n# ")
                          << "\n# seed " << seed << ", features: " << features << "\n" << g.text;
    std::string first_line = what.substr(0, what.find("\nprove said"));
    std::ofstream(dump_dir + "/failures.txt", std::ios::app)
        << seed << "\t" << cls << "\t" << features << "\t" << std::regex_replace(first_line, std::regex("\n"), " | ") << "\n";
  }
}

RunResult PropertyRun::run(const Module& m, const std::vector<interp::Array>& in, const interp::RunOptions& o,
                           uint64_t seed, const GenProgram& g) {
  RunResult r;
  try {
    r.outputs = interp::run_function(m, "main", in, o);
  } catch (const Error& e) {
    r.error = e.formatted();
    if (e.loc().line <= 0) fail(seed, g, "run error without a location", r.error);
    if (r.error.empty()) r.error = "(empty message)";
  } catch (const std::exception& e) {
    fail(seed, g, "run threw a foreign exception", std::string(typeid(e).name()) + ": " + e.what());
    r.error = e.what();
  }
  return r;
}

void PropertyRun::check_program(uint64_t seed, const GenProgram& g) {
  ++counts["programs"];
  // 1. Parse and verify: success or located errors.
  Module m;
  try {
    m = parse_module(g.text, "prop.tsr");
  } catch (const Error& e) {
    if (e.loc().line <= 0) fail(seed, g, "parse error without a location", e.formatted());
    ++counts["parse errors"];
    return;
  }
  std::vector<Diagnostic> diags;
  try {
    diags = verify_module(m);
  } catch (const Error& e) {
    fail(seed, g, "verify threw", e.formatted());
    return;
  }
  for (const Diagnostic& d : diags)
    if (d.loc.line <= 0) fail(seed, g, "verifier diagnostic without a location", d.str());
  if (!diags.empty()) {
    ++counts["rejected by verify"];
    return;
  }
  ++counts["verified"];

  prove::Options popts;
  popts.timeout_ms = 5000;
  popts.rlimit = 5'000'000;
  std::vector<prove::Obligation> obs;
  try {
    popts.assumptions = prove::assumptions_in_source(g.text);
    obs = prove::prove_module(m, popts);
  } catch (const Error& e) {
    ++counts["prove errors"];
    if (e.loc().line <= 0 && e.message().empty()) fail(seed, g, "prove error without a message", e.formatted());
  } catch (const std::exception& e) {
    fail(seed, g, "prove threw a foreign exception", std::string(typeid(e).name()) + ": " + e.what());
    return;
  }
  std::string verdicts;
  bool all_proved = !obs.empty(), ordering_proved = !obs.empty();
  for (const prove::Obligation& o : obs) {
    verdicts += "  " + o.line() + "\n";
    bool ok = o.verdict == prove::Verdict::proved;
    all_proved &= ok;
    // Every claim that is not about where a block lies (parallel safety and
    // whatever the prover adds about order and shared state).
    if (o.kind != "bounds" && o.kind != "kernel bounds" && o.kind != "non-revisiting") ordering_proved &= ok;
    ++counts[std::string("claims ") + std::string(prove::verdict_name(o.verdict))];
  }
  if (all_proved) ++counts["fully proved"];
  auto proved = [&](const std::string& subject, const std::string& kind) -> std::optional<bool> {
    for (const prove::Obligation& o : obs)
      if (o.subject == subject && o.kind == kind) return o.verdict == prove::Verdict::proved;
    return std::nullopt;
  };

  BodyPtr f = m.entry("main");
  std::vector<interp::Array> inputs;
  for (size_t i = 0; i < f->params().size(); ++i)
    inputs.push_back(interp::random_array(f->params()[i]->type.array_type(), seed * 1000003 + i));

  // 2. Proved claims hold on every configuration.
  const std::vector<RunConfig> configs = {{1, std::nullopt}, {2, std::nullopt}, {1, 11}, {2, 12}, {2, 987654321}};
  std::vector<RunResult> results;
  for (const RunConfig& c : configs) {
    RunResult r = run(m, inputs, options(c, interp::RunOptions::Uninit::zero), seed, g);
    if (!r.error.empty()) {
      ++counts["run errors"];
      std::string where = "run " + c.flags() + " failed:\n  " + r.error + "\nprove said:\n" + verdicts;
      auto claim = claim_of(r.error);
      if (r.error.find("steps") != std::string::npos && r.error.find("max") != std::string::npos) {
        ++counts["step limit"];
      } else if (all_proved) {
        fail(seed, g, "proved, then run error" + (claim ? " (" + claim->second + ")" : std::string()), where);
      } else if (claim && claim->second == "parallel") {
        if (ordering_proved) fail(seed, g, "parallel safety proved, then a race", where);
      } else if (claim) {
        std::optional<bool> p = proved(claim->first, claim->second);
        if (p.value_or(false)) fail(seed, g, claim->first + " " + claim->second + " proved, then broken", where);
      } else {
        ++counts["run errors no claim covers"];
      }
    }
    results.push_back(std::move(r));
  }
  bool clean = true;
  for (const RunResult& r : results) clean &= r.error.empty();
  if (!clean) return;
  ++counts["ran clean"];
  bool order_free = true;  // the same outputs on every core count and grid order
  for (size_t k = 1; k < results.size(); ++k) {
    bool same = results[k].outputs.size() == results[0].outputs.size();
    for (size_t o = 0; same && o < results[0].outputs.size(); ++o) same = same_bits(results[k].outputs[o], results[0].outputs[o]);
    order_free &= same;
    if (!same && ordering_proved) {
      fail(seed, g, "parallel safety proved, outputs depend on cores / grid order",
           "run " + configs[k].flags() + " differs from run " + configs[0].flags() + "\nprove said:\n" + verdicts);
      break;
    }
  }

  // 3. discharge computes what the stateful program computes: where parallel
  // safety is proved, or where the runs showed no race and no dependence on
  // the order (a claim the prover leaves unknown, as for masked accesses it
  // does not model, does not make the program's meaning less defined).
  if (!(ordering_proved || order_free) || g.stale_reads) return;
  // The elements that do not depend on uninitialized memory (padding of
  // partial blocks, output blocks never written) are the same when it reads
  // as NaN; only those are compared.
  RunResult with_nan = run(m, inputs, options(configs[0], interp::RunOptions::Uninit::nan), seed, g);
  if (!with_nan.error.empty()) return;
  std::vector<std::vector<bool>> defined;
  bool some_undefined = false;
  for (size_t o = 0; o < with_nan.outputs.size(); ++o) {
    const interp::Array &a = with_nan.outputs[o], &b = results[0].outputs[o];
    defined.emplace_back(static_cast<size_t>(b.size()));
    for (int64_t i = 0; i < b.size(); ++i) {
      double x = a.get(i), y = b.get(i);
      defined[o][static_cast<size_t>(i)] = x == y || (std::isnan(x) && std::isnan(y));
      some_undefined |= !defined[o][static_cast<size_t>(i)];
    }
  }
  if (some_undefined) ++counts["outputs partly uninitialized"];
  Module d;
  try {
    d = run_pipeline(m, "discharge,dce");
    verify_or_throw(d);
  } catch (const Error& e) {
    ++counts["discharge errors"];
    return;
  } catch (const std::exception& e) {
    fail(seed, g, "discharge threw a foreign exception", std::string(typeid(e).name()) + ": " + e.what());
    return;
  }
  RunResult dr = run(d, inputs, options(configs[0], interp::RunOptions::Uninit::zero), seed, g);
  ++counts["discharge compared"];
  for (const std::string& n : g.notes)
    if (n == "masked overhang") ++counts["discharge compared, masked overhang"];
  if (!dr.error.empty()) {
    fail(seed, g, "discharged program fails where the stateful one ran", dr.error);
    return;
  }
  for (size_t o = 0; o < dr.outputs.size() && o < results[0].outputs.size(); ++o) {
    int64_t at = first_difference(dr.outputs[o], results[0].outputs[o], defined[o], 1e-5);
    if (at >= 0) {
      fail(seed, g, "discharge,dce computes other outputs",
           "output " + std::to_string(o) + " differs at flat index " + std::to_string(at) + ": " +
               (at < dr.outputs[o].size() ? std::to_string(dr.outputs[o].get(at)) : std::string("(shape)")) +
               " after discharge, " + std::to_string(results[0].outputs[o].get(at)) + " before");
      return;
    }
  }
}

}  // namespace

TEST_CASE("random pallas_calls: prove's claims hold at run time, and discharge computes what the kernel did") {
  int64_t cases = env_int("TESSERA_PROPERTY_CASES", kSanitized ? 12 : 60);
  uint64_t first = static_cast<uint64_t>(env_int("TESSERA_PROPERTY_SEED", 20261124));
  GenFeatures features = features_from_env();
  PropertyRun pr;
  if (const char* d = std::getenv("TESSERA_PROPERTY_DUMP")) pr.dump_dir = d;
  for (int64_t k = 0; k < cases; ++k) {
    uint64_t seed = first + static_cast<uint64_t>(k);
    ProgramGen gen(seed, features);
    pr.check_program(seed, gen.make());
  }
  std::string summary;
  for (const auto& [what, n] : pr.counts) summary += "  " + what + ": " + std::to_string(n) + "\n";
  for (const auto& [what, n] : pr.failures) summary += "  FAILED " + what + ": " + std::to_string(n) + "\n";
  MESSAGE("property test, seeds " << first << ".." << first + static_cast<uint64_t>(cases) - 1 << ":\n" << summary);
  // The generator reaches every stage, or the test would prove little.
  if (cases >= 40) {
    CHECK(pr.counts["verified"] > cases / 2);
    CHECK(pr.counts["fully proved"] > cases / 10);
    CHECK(pr.counts["ran clean"] > cases / 10);
    CHECK(pr.counts["discharge compared"] > cases / 20);
  }
}
