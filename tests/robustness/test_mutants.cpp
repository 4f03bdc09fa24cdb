// Robustness: every example (and its jvp, vmap and discharge), mutated at random (spans deleted, tokens
// inserted, numbers replaced, lines dropped, duplicated or swapped, names
// exchanged, the file cut short), goes through the whole tool chain: parser,
// verifier, passes, prover and interpreter. Each stage must either succeed or
// throw tessera::Error; anything else (another exception type, a crash, a
// sanitizer report, a hang) fails. Errors from the parser and the verifier
// must carry a source location.
//
// TESSERA_MUTANTS=N (mutants per example, default 150, 40 under ASan) and TESSERA_MUTANT_SEED
// make a longer or different campaign: `TESSERA_MUTANTS=5000
// build/tests/robustness/test_robustness`.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>
#include <typeinfo>

#include "analysis/cost/cost.h"
#include "analysis/prove/prove.h"
#include "robustness_util.h"
#include "tests/test_util.h"
#include "interpreter/inputs.h"
#include "interpreter/interpreter.h"
#include "ir/grid_mapping.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "transforms/pass.h"
#include "verify/verify.h"

using namespace tessera;
using tessera::robustness::env_int;
using tessera::testing::read_file;

namespace {

class Mutator {
 public:
  explicit Mutator(uint64_t seed) : rng_(seed) {}

  std::string mutate(std::string text) {
    int rounds = pick(0, 3) == 0 ? 2 : 1;
    for (int r = 0; r < rounds && !text.empty(); ++r) text = once(std::move(text));
    return text;
  }

 private:
  int64_t pick(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng_); }
  template <class T>
  const T& one_of(const std::vector<T>& v) { return v[static_cast<size_t>(pick(0, static_cast<int64_t>(v.size()) - 1))]; }

  static std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::stringstream ss(text);
    for (std::string l; std::getline(ss, l);) lines.push_back(l);
    return lines;
  }
  static std::string join(const std::vector<std::string>& lines) {
    std::string s;
    for (const std::string& l : lines) s += l + "\n";
    return s;
  }
  // Start offsets and lengths of every match of `re` in `text`.
  static std::vector<std::pair<size_t, size_t>> matches(const std::string& text, const std::regex& re) {
    std::vector<std::pair<size_t, size_t>> out;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it)
      out.emplace_back(static_cast<size_t>(it->position()), static_cast<size_t>(it->length()));
    return out;
  }

  std::string once(std::string text) {
    size_t n = text.size();
    size_t at = static_cast<size_t>(pick(0, static_cast<int64_t>(n) - 1));
    // Edits that keep the text parseable (numbers, names, whole lines) come
    // more often than raw character edits, so later stages see mutants too.
    static const std::vector<int> kinds = {0, 1, 2, 2, 2, 2, 3, 3, 4, 4, 5, 6, 6, 6, 6, 7};
    switch (one_of(kinds)) {
      case 0:  // delete a short span
        return text.erase(at, static_cast<size_t>(pick(1, 12)));
      case 1: {  // insert a token
        static const std::vector<std::string> tokens = {
            ",", "(", ")", "[", "]", "{", "}", ":", "=", "%x", "@k", "0", "-1", "2147483648", "f32", "i32", "bf16",
            "ref<f32[8], vmem>", "ref<i32[1], smem>", "spec((8, 128), @m)", "squeezed", " ", "\n", "\"", "#", ":,",
            "dimension_semantics=(parallel)", "grid=(0)", "-", "1e40", "nan", "true"};
        return text.insert(at, one_of(tokens));
      }
      case 2: {  // replace an integer literal: a near value (off by one, doubled) or an extreme one
        static const std::regex number("-?[0-9]+");
        auto ms = matches(text, number);
        if (ms.empty()) return text;
        static const std::vector<std::string> values = {"0", "-1", "1", "2", "3", "7", "64", "127", "2147483647",
                                                        "-2147483648", "4294967296", "99999999999999999999"};
        auto [pos, len] = one_of(ms);
        std::string old = text.substr(pos, len);
        if (len > 9 || pick(0, 1)) return text.replace(pos, len, one_of(values));
        int64_t v = std::stoll(old);
        switch (pick(0, 3)) {
          case 0: v += 1; break;
          case 1: v -= 1; break;
          case 2: v *= 2; break;
          default: v /= 2; break;
        }
        return text.replace(pos, len, std::to_string(v));
      }
      case 3: {  // delete a line
        auto lines = lines_of(text);
        if (lines.empty()) return text;
        lines.erase(lines.begin() + pick(0, static_cast<int64_t>(lines.size()) - 1));
        return join(lines);
      }
      case 4: {  // duplicate a line
        auto lines = lines_of(text);
        if (lines.empty()) return text;
        size_t i = static_cast<size_t>(pick(0, static_cast<int64_t>(lines.size()) - 1));
        lines.insert(lines.begin() + static_cast<int64_t>(i), lines[i]);
        return join(lines);
      }
      case 5: {  // swap two lines
        auto lines = lines_of(text);
        if (lines.size() < 2) return text;
        std::swap(lines[static_cast<size_t>(pick(0, static_cast<int64_t>(lines.size()) - 1))],
                  lines[static_cast<size_t>(pick(0, static_cast<int64_t>(lines.size()) - 1))]);
        return join(lines);
      }
      case 6: {  // one name for another (%a for %b, @f for @g, a dtype or memory space for another)
        static const std::regex name("[%@][A-Za-z_][A-Za-z0-9_]*|\\b(f32|f64|bf16|f16|i32|i8|bool|vmem|smem|any|hbm)\\b");
        auto ms = matches(text, name);
        if (ms.size() < 2) return text;
        auto [pos, len] = one_of(ms);
        auto [opos, olen] = one_of(ms);
        return text.replace(pos, len, text.substr(opos, olen));
      }
      default:  // cut the file short
        return text.substr(0, at);
    }
  }

  std::mt19937_64 rng_;
};

// The example without its comments, so that mutations land in code.
std::string strip_comments(const std::string& text) {
  std::stringstream in(text);
  std::string out;
  for (std::string line; std::getline(in, line);) {
    size_t hash = line.find('#');
    if (hash != std::string::npos && line.find('"') == std::string::npos) line.erase(hash);
    if (line.find_first_not_of(' ') != std::string::npos) out += line + "\n";
  }
  return out;
}

// The most elements any value, parameter or result of the module holds (capped).
int64_t largest_value(const Module& m) {
  int64_t most = 0;
  auto count = [&](const Type& t) {
    int64_t n = 1;
    for (int64_t d : t.shape()) n = d <= 0 ? 0 : std::min<int64_t>(n * std::min<int64_t>(d, 1 << 30), int64_t{1} << 40);
    most = std::max(most, n);
  };
  std::vector<BodyPtr> work(m.symbols().begin(), m.symbols().end());
  while (!work.empty()) {
    BodyPtr b = work.back();
    work.pop_back();
    for (const Var* p : b->params()) count(p->type);
    for (const Op& op : b->ops()) {
      for (const Var* r : op.results) count(r->type);
      for (const BodyPtr& nb : op.nested_bodies()) work.push_back(nb);
    }
  }
  return most;
}

// Either succeeds or throws tessera::Error; reports anything else.
template <class F>
bool survives(const char* stage, const std::string& text, F&& f, bool need_location) {
  try {
    f();
    return true;
  } catch (const Error& e) {
    if (need_location)
      CHECK_MESSAGE(e.loc().line > 0, (std::string(stage) + " error without a location: " + e.formatted() + "\n" + text));
    return false;
  } catch (const std::exception& e) {
    FAIL_CHECK((std::string(stage) + " threw " + typeid(e).name() + " (" + e.what() + ") instead of tessera::Error on\n" + text));
    return false;
  }
}

}  // namespace

TEST_CASE("mutated examples: every stage succeeds or reports a located tessera::Error") {
  const int64_t default_mutants = kSanitized ? 40 : 150;
  int64_t per_example = env_int("TESSERA_MUTANTS", default_mutants);
  uint64_t seed = static_cast<uint64_t>(env_int("TESSERA_MUTANT_SEED", 20261123));
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(tessera::testing::examples_dir()))
    if (e.path().extension() == ".tsr") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() >= 10);

  // Seeds: each example, and what jvp, vmap and discharge make of it (IR
  // shapes the examples alone do not have: tangent mappings, a batch grid
  // axis, loops over the grid), with a third as many mutants each.
  struct Seed {
    std::string name, text;
    int64_t mutants;
  };
  std::vector<Seed> seeds;
  for (const auto& path : files) {
    std::string name = path.filename().string(), text = strip_comments(read_file(path));
    seeds.push_back({name, text, per_example});
    Module m = parse_module(text, name);
    for (const char* pipeline : {"jvp", "vmap{axis_size=2}", "discharge,dce"}) {
      try {
        seeds.push_back({name + " | " + pipeline, print_module(run_pipeline(m, pipeline)), per_example / 3});
      } catch (const Error&) {
        // Not every transform applies to every example (jvp of a DMA kernel).
      }
    }
  }

  int parsed = 0, verified = 0, interpreted = 0, total = 0;
  for (const Seed& origin : seeds) {
    const std::string& original = origin.text;
    int64_t budget = largest_value(parse_module(original, origin.name));
    Mutator mut(seed ^ std::hash<std::string>{}(origin.name));
    for (int64_t k = 0; k < origin.mutants; ++k) {
      std::string text = mut.mutate(original);
      INFO("mutant of ", origin.name, ":\n", text);  // printed if a stage crashes
      ++total;
      Module m;
      if (!survives("parse", text, [&] { m = parse_module(text, "mutant.tsr"); }, true)) continue;
      ++parsed;
      std::vector<Diagnostic> diags;
      if (!survives("verify", text, [&] { diags = verify_module(m); }, true)) continue;
      for (const Diagnostic& d : diags) CHECK_MESSAGE(d.loc.line > 0, "verifier diagnostic without a location: " << d.str());
      if (!diags.empty()) continue;
      ++verified;
      PipelineOptions po;
      po.verify_each = true;
      for (const char* pipeline : {"dce", "discharge,dce", "jvp", "vmap{axis_size=2}", "linearize"})
        survives(pipeline, text, [&] { verify_or_throw(run_pipeline(m, pipeline, po)); }, false);
      prove::Options popts;
      popts.timeout_ms = 2000;
      popts.rlimit = 5'000'000;
      survives("prove", text, [&] { prove::prove_module(m, popts); }, false);
      // Run what stays as small as the example (a mutated shape can ask for
      // terabytes); the step limit stops long grids and loops.
      if (largest_value(m) > budget) continue;
      cost::CostOptions copts;
      copts.max_walk_ops = 200'000;
      copts.index_maps = interp::index_map_function;
      copts.prefetch = [](const Op& call) {
        std::vector<interp::Array> values;
        for (const Type& t : grid_mapping(call).scalar_prefetch_types) values.push_back(interp::random_array(t.array_type(), 3));
        return values;
      };
      if (BodyPtr main = m.find("main")) survives("cost", text, [&] { cost::compute_cost(m, *main, copts); }, true);
      // Each mutant runs under its own mix of the simulator's options.
      std::mt19937_64 orng(static_cast<uint64_t>(total));
      interp::RunOptions ro;
      ro.max_steps = 200'000;
      ro.cores = orng() % 2 ? 2 : 1;
      ro.dma = orng() % 2 ? interp::RunOptions::Dma::eager : interp::RunOptions::Dma::on_wait;
      ro.oob = orng() % 4 ? interp::RunOptions::Oob::raise : interp::RunOptions::Oob::uninitialized;
      ro.detect_races = orng() % 3 == 0;
      interp::RunStats stats;
      ro.stats = &stats;  // the counters, on every mix of options
      if (orng() % 2) ro.grid_seed = orng();
      survives("run", text, [&] {
        BodyPtr f = m.entry("main");
        std::vector<interp::Array> inputs;
        for (size_t i = 0; i < f->params().size(); ++i) {
          const Type& t = f->params()[i]->type;
          if (t.is_ref()) throw Error("a Ref parameter of main");
          inputs.push_back(interp::random_array(t.array_type(), i + 1));
        }
        interp::run_function(m, "main", inputs, ro);
        ++interpreted;
      }, false);
    }
  }
  MESSAGE(total << " mutants: " << parsed << " parsed, " << verified << " verified, " << interpreted << " ran to the end");
  // The mutations reach every stage, or the test would prove little.
  CHECK(parsed > total / 20);
  CHECK(verified > total / 40);
  CHECK(interpreted > 0);
}
