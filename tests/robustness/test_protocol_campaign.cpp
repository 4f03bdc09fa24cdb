// Protocol campaign: the prover's protocol and state claims against the
// interpreter on random protocol programs (protocol_gen.h makes them: pmaps
// and core_maps of 1 to 5, per-device scalar prefetch and grid sizes, targets
// with and without a modulo, waits naming other regions, partly written
// output blocks, cores sharing a Ref). Per program, the runs are:
//
// * 1, 2 and 3 cores per device, each in the interpreter's grid order and
//   under two grid seeds; the same with race detection on 1, 2 and 3 cores
//   and one seed (a run stops at its first race, which may hide a deadlock
//   further on); `--dma eager` on 1 and 2 cores; one run with uninitialized
//   memory as NaN (the others read it as zero). Programs whose values come
//   from inputs (split prefetch or grid sizes) also run on two more input
//   draws.
//
// What the runs show is evidence: a deadlock or a semaphore left non-zero, a
// device / core index out of range, a race, an out-of-bounds access, outputs
// that depend on the core count, grid order or DMA timing, outputs that
// depend on what uninitialized memory holds. A disagreement is
//
// * evidence that every claim able to explain it proved (or, where no claim
//   is about it, a program with every claim proved): `proved`, then broken;
// * a FAILED claim that no run shows although every run ran to its end (a
//   run that stopped on another error might have shown it later; a FAILED
//   that depends on input values may need other inputs than the ones
//   drawn: both are counted, not failed).
//
// The test passes with 0 disagreements. Shapes whose disagreements are known
// and still open are kept out of the default generator (kOpenShapes below,
// with the reason), and open classes that no shape isolates are reported, not
// failed (kOpenClasses); TESSERA_CAMPAIGN_OPEN=1 puts both back. A failure prints
// the program (its own reproducer) and the commands that show the
// disagreement. Knobs for longer campaigns:
//   TESSERA_CAMPAIGN_CASES=N   programs (default 40; 10 under ASan)
//   TESSERA_CAMPAIGN_SEED=S    the first program's seed (program k has S + k)
//   TESSERA_CAMPAIGN_OPEN=1    also generate the open shapes, and fail the open classes
//   TESSERA_CAMPAIGN_DUMP=DIR  write every disagreeing program to DIR/<seed>.tsr
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>

#include "interpreter/inputs.h"
#include "protocol_gen.h"
#include "robustness_util.h"
#include "tests/analysis/protocol_test_util.h"

using namespace tessera;
using namespace tessera::robustness;
using tessera::prove::testing::has;
using tessera::prove::testing::parse_verified;

namespace {

// Shapes whose disagreements are known and not yet fixed, left out of the
// default campaign: {shape, why}. Remove an entry once its fix lands, so the
// campaign guards it.
// Each has its reproducer in protocol_cases/ (named after it).
const std::vector<std::pair<std::string, std::string>> kOpenShapes = {};

// Disagreement classes that no shape isolates, known and not fixed yet:
// counted and reported, not failed (TESSERA_CAMPAIGN_OPEN=1 fails them).
const std::vector<std::pair<std::string, std::string>> kOpenClasses = {};

// One configuration of the simulator.
struct RunConfig {
  int cores = 1;
  std::optional<uint64_t> grid_seed;
  bool eager = false;
  bool nan_fill = false;
  bool races = false;  // --detect-races (a run stops at the first race, before a deadlock it would reach)
  uint64_t input_seed = 0;  // --random-inputs
  std::string flags() const {
    std::string s = "--random-inputs " + std::to_string(input_seed) + (races ? " --detect-races" : "") + " --cores " +
                    std::to_string(cores);
    if (grid_seed) s += " --grid-seed " + std::to_string(*grid_seed);
    if (eager) s += " --dma eager";
    s += nan_fill ? " --uninit nan" : " --uninit zero";
    return s;
  }
};

// What a run shows, by name; claims_for says which claims explain each.
std::string evidence_of(const std::string& msg) {
  if (has(msg, "RACE DETECTED")) return "race";
  if (has(msg, "deadlock") || has(msg, "non-zero count")) return "unbalanced semaphore";
  if (has(msg, "is out of range")) return "target out of range";
  if (has(msg, "Out-of-bounds block index")) return "block out of bounds";
  if (has(msg, "Revisited block")) return "revisit";
  if (has(msg, "Out-of-bounds")) return "kernel out of bounds";
  if (has(msg, "steps") && has(msg, "max")) return "step limit";
  return "other run error";
}

// Whether a claim of this kind, not proved, explains the evidence. New claim
// kinds count by their words: a claim about races explains races and
// order-dependent outputs, one about output coverage what uninitialized
// memory shows.
bool explains(const std::string& kind, const std::string& evidence) {
  static const std::map<std::string, std::set<std::string>> table = {
      {"semaphore balance", {"unbalanced semaphore", "target out of range"}},
      {"kernel bounds", {"kernel out of bounds", "target out of range"}},
      {"DMA races", {"race", "outputs depend on the run"}},
      {"parallel safety", {"race", "outputs depend on the run"}},
      {"carried state", {"race", "outputs depend on the run", "outputs depend on uninitialized memory"}},
      {"non-revisiting", {"revisit"}},
      {"bounds", {"block out of bounds"}},
  };
  auto it = table.find(kind);
  if (it != table.end()) return it->second.count(evidence) > 0;
  if (has(kind, "race")) return evidence == "race" || evidence == "outputs depend on the run";
  if (has(kind, "coverage") || has(kind, "output"))
    return evidence == "outputs depend on uninitialized memory" || evidence == "outputs depend on the run";
  return false;
}

class Campaign {
 public:
  std::map<std::string, int> counts;         // what the campaign saw
  std::map<std::string, int> disagreements;  // by class
  std::map<std::string, std::set<std::string>> class_shapes;  // shapes seen in each class's programs
  std::string dump_dir;
  bool report_only = false;  // count disagreements without failing (the open reproducers)

  // Checks program `p`; `seed` draws its inputs (--random-inputs), `origin`
  // says where it comes from in a failure.
  void check(uint64_t seed, const std::string& origin, const ProtocolProgram& p);

 private:
  struct Run {
    RunConfig config;
    std::vector<interp::Array> outputs;
    std::string error;
  };
  void disagree(uint64_t seed, const std::string& origin, const ProtocolProgram& p, const std::string& cls,
                const std::string& what);
};

void Campaign::disagree(uint64_t seed, const std::string& origin, const ProtocolProgram& p, const std::string& cls,
                        const std::string& what) {
  ++disagreements[cls];
  std::string shapes;
  for (const std::string& s : p.shapes) {
    shapes += (shapes.empty() ? "" : ", ") + s;
    class_shapes[cls].insert(s);
  }
  std::string report = "[" + cls + "] " + what + "\n" + origin + ", shapes: " + shapes + "\n" + p.text;
  bool open_class = false;
  for (const auto& [name, why] : kOpenClasses) open_class |= name == cls && env_int("TESSERA_CAMPAIGN_OPEN", 0) == 0;
  if (report_only || open_class) return;
  FAIL_CHECK(report);
  if (dump_dir.empty()) return;
  std::filesystem::create_directories(dump_dir);
  std::string path = dump_dir + "/" + std::to_string(seed) + ".tsr";
  if (!std::filesystem::exists(path)) {
    std::string comment = "# [" + cls + "] " + what;
    for (size_t at = comment.find('\n'); at != std::string::npos; at = comment.find('\n', at + 3)) comment.replace(at, 1, "\n# ");
    std::ofstream(path) << comment << "\n# seed " << seed << ", shapes: " << shapes << "\n" << p.text;
  }
  std::ofstream(dump_dir + "/disagreements.txt", std::ios::app) << seed << "\t" << cls << "\t" << shapes << "\n";
}

void Campaign::check(uint64_t seed, const std::string& origin, const ProtocolProgram& p) {
  ++counts["programs"];
  Module m;
  try {
    m = parse_verified(p.text);
  } catch (const Error& e) {
    disagree(seed, origin, p, "generated program does not verify", e.formatted());
    return;
  }
  prove::Options popts;
  popts.timeout_ms = 5000;
  popts.rlimit = 5'000'000;
  std::vector<prove::Obligation> obs;
  try {
    popts.assumptions = prove::assumptions_in_source(p.text);
    obs = prove::prove_module(m, popts);
  } catch (const Error& e) {
    ++counts["prove errors"];
    MESSAGE("prove error on " << origin << ": " << e.formatted());
    return;
  }
  std::string verdicts;
  bool all_proved = !obs.empty();
  for (const prove::Obligation& o : obs) {
    verdicts += "  " + o.line() + "\n";
    all_proved &= o.verdict == prove::Verdict::proved;
    ++counts[std::string("claims ") + std::string(prove::verdict_name(o.verdict))];
  }
  if (all_proved) ++counts["fully proved"];

  // The runs.
  bool input_values = p.shapes.count("prefetch-split") || p.shapes.count("dynamic-grid-split");
  std::vector<RunConfig> configs;
  for (int cores : {1, 2, 3})
    for (std::optional<uint64_t> gs : {std::optional<uint64_t>(), std::optional<uint64_t>(7), std::optional<uint64_t>(12345)})
      configs.push_back({cores, gs, false, false, false, seed});
  for (int cores : {1, 2, 3}) configs.push_back({cores, std::nullopt, false, false, true, seed});
  configs.push_back({2, 7, false, false, true, seed});
  configs.push_back({1, std::nullopt, true, false, false, seed});
  configs.push_back({2, std::nullopt, true, false, true, seed});
  configs.push_back({1, std::nullopt, false, true, false, seed});
  size_t nan_run = configs.size() - 1;
  if (input_values)
    for (uint64_t k = 1; k <= 2; ++k) {
      configs.push_back({1, std::nullopt, false, false, true, seed + 1000 * k});
      configs.push_back({2, 7, false, false, false, seed + 1000 * k});
    }
  BodyPtr f = m.entry("main");
  std::vector<Run> runs;
  for (const RunConfig& c : configs) {
    Run r{c, {}, ""};
    std::vector<interp::Array> inputs;
    for (size_t i = 0; i < f->params().size(); ++i)
      inputs.push_back(interp::random_array(f->params()[i]->type.array_type(), c.input_seed * 1000003 + i));
    interp::RunOptions o;
    o.detect_races = c.races;
    o.cores = c.cores;
    o.grid_seed = c.grid_seed;
    o.dma = c.eager ? interp::RunOptions::Dma::eager : interp::RunOptions::Dma::on_wait;
    o.uninit = c.nan_fill ? interp::RunOptions::Uninit::nan : interp::RunOptions::Uninit::zero;
    o.max_steps = 200'000;
    try {
      r.outputs = interp::run_function(m, "main", inputs, o);
    } catch (const Error& e) {
      r.error = e.formatted();
    }
    runs.push_back(std::move(r));
  }

  // Evidence, each with the first run that shows it.
  std::map<std::string, std::string> evidence;
  auto note = [&](const std::string& e, const std::string& how) {
    if (!evidence.count(e)) evidence[e] = how;
  };
  for (const Run& r : runs)
    if (!r.error.empty()) note(evidence_of(r.error), "tessera run " + r.config.flags() + ":\n  " + r.error);
  // Outputs of clean runs on the same inputs: zero-filled ones against each
  // other; the NaN-filled one against its zero-filled twin (runs[0]).
  const Run* first = nullptr;
  for (size_t k = 0; k < runs.size(); ++k) {
    const Run& r = runs[k];
    if (!r.error.empty() || r.config.input_seed != seed || k == nan_run) continue;
    if (!first) {
      first = &r;
    } else if (!same_bits(r.outputs, first->outputs)) {
      note("outputs depend on the run", "tessera run " + r.config.flags() + " differs from tessera run " + first->config.flags());
    }
  }
  if (runs[0].error.empty() && runs[nan_run].error.empty() && !same_bits(runs[0].outputs, runs[nan_run].outputs))
    note("outputs depend on uninitialized memory",
         "tessera run " + runs[nan_run].config.flags() + " differs from tessera run " + runs[0].config.flags());
  evidence.erase("step limit");
  if (evidence.empty()) ++counts["ran clean"];

  // 1. Every piece of evidence is explained by a claim that is not proved.
  for (const auto& [e, how] : evidence) {
    ++counts["evidence: " + e];
    bool some_claim = false, explained = false;
    for (const prove::Obligation& o : obs)
      if (explains(o.kind, e)) some_claim = true, explained |= o.verdict != prove::Verdict::proved;
    if (explained || (!some_claim && !all_proved)) continue;
    std::string cls = some_claim ? "proved, then " + e : "every claim proved, then " + e + " (no claim covers it)";
    disagree(seed, origin, p, cls, "tessera prove: every claim that covers it proved\n" + verdicts + how);
  }
  // 2. Every FAILED claim shows in some run.
  bool stopped = false;
  for (const Run& r : runs) stopped |= !r.error.empty();
  for (const prove::Obligation& o : obs) {
    if (o.verdict != prove::Verdict::failed) continue;
    bool shown = false;
    for (const auto& [e, how] : evidence) shown |= explains(o.kind, e);
    if (shown) continue;
    if (input_values) {
      ++counts["FAILED not shown on the inputs drawn (values from inputs)"];
      continue;
    }
    if (stopped) {
      // A run that stopped on another error might have shown it further on.
      ++counts["FAILED not shown (runs stopped on another error first)"];
      continue;
    }
    disagree(seed, origin, p, "FAILED " + o.kind + " not reproduced",
             "tessera prove:\n" + verdicts + "no run of the " + std::to_string(runs.size()) + " shows it (" +
                 (evidence.empty() ? std::string("all ran clean and agree") : "they show only: " + evidence.begin()->first) +
                 "); first run: tessera run " + runs[0].config.flags());
  }
}

std::set<std::string> default_off() {
  std::set<std::string> off;
  if (env_int("TESSERA_CAMPAIGN_OPEN", 0) == 0)
    for (const auto& [shape, why] : kOpenShapes) off.insert(shape);
  return off;
}

}  // namespace

TEST_CASE("protocol campaign: proved claims hold on 1, 2 and 3 cores, every grid order and DMA timing; FAILED ones reproduce") {
  int64_t cases = env_int("TESSERA_CAMPAIGN_CASES", kSanitized ? 10 : 40);
  uint64_t first = static_cast<uint64_t>(env_int("TESSERA_CAMPAIGN_SEED", 20261127));
  Campaign c;
  if (const char* d = std::getenv("TESSERA_CAMPAIGN_DUMP")) c.dump_dir = d;
  std::set<std::string> off = default_off();
  std::map<std::string, int> shapes_seen;
  for (int64_t k = 0; k < cases; ++k) {
    uint64_t seed = first + static_cast<uint64_t>(k);
    ProtocolProgram p = ProtocolGen(seed, off).make();
    for (const std::string& s : p.shapes) ++shapes_seen[s];
    c.check(seed, "program seed " + std::to_string(seed) + " (TESSERA_CAMPAIGN_SEED=" + std::to_string(seed) +
                      " TESSERA_CAMPAIGN_CASES=1)", p);
  }
  std::string summary;
  for (const auto& [what, n] : c.counts) summary += "  " + what + ": " + std::to_string(n) + "\n";
  for (const auto& [what, n] : shapes_seen) summary += "  shape " + what + ": " + std::to_string(n) + "\n";
  for (const auto& [what, n] : c.disagreements) {
    std::string shapes;
    for (const std::string& s : c.class_shapes[what]) shapes += (shapes.empty() ? "" : ", ") + s;
    summary += "  DISAGREEMENT " + what + ": " + std::to_string(n) + " (shapes seen: " + shapes + ")\n";
  }
  for (const auto& [shape, why] : kOpenShapes)
    summary += "  open shape " + shape + (off.count(shape) ? " (left out): " : " (generated): ") + why + "\n";
  for (const auto& [cls, why] : kOpenClasses) summary += "  open class '" + cls + "' (reported, not failed): " + why + "\n";
  MESSAGE("protocol campaign, seeds " << first << ".." << first + static_cast<uint64_t>(cases) - 1 << ":\n" << summary);
  // Every shape the generator may use occurs, or the campaign would test little.
  if (cases >= 40)
    for (const std::string& s : protocol_shapes())
      if (shape_possible(s, off)) CHECK_MESSAGE(shapes_seen[s] > 0, "shape " << s << " never generated");
}

// The campaign's reproducers (protocol_cases/*.tsr, one per class of
// disagreement it found), through the same checks with --random-inputs 1. A
// file with a line `# open: ...` is a class not fixed yet: its outcome is
// reported, not failed (when it agrees, the line should go). Every other file
// must agree: it guards a fixed class.
TEST_CASE("protocol campaign reproducers: fixed classes agree; open ones are reported") {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(TESSERA_PROTOCOL_CASES_DIR))
    if (e.path().extension() == ".tsr") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  REQUIRE(!files.empty());
  std::string report;
  for (const std::filesystem::path& f : files) {
    std::ifstream in(f);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    bool open = text.rfind("# open:", 0) == 0 || has(text, "\n# open:");
    Campaign c;
    c.report_only = open;
    CAPTURE(f.filename().string());
    c.check(1, f.filename().string(), {text, {}});
    std::string classes;
    for (const auto& [cls, n] : c.disagreements) classes += (classes.empty() ? "" : "; ") + cls;
    if (open)
      report += "  " + f.filename().string() + (classes.empty() ? ": agrees now (drop its '# open:' line)" : ": open, " + classes) + "\n";
  }
  MESSAGE("protocol reproducers:\n" << report);
}
