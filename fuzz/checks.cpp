#include "fuzz/checks.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <stdexcept>
#include <typeinfo>

#include "analysis/prove/prove.h"
#include "frontends/mosaic/mosaic_import.h"
#include "interpreter/inputs.h"
#include "interpreter/interpreter.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "transforms/pass.h"
#include "verify/verify.h"

namespace tessera::fuzz {
namespace {

constexpr const char* kInputFile = "fuzz.tsr";
constexpr const char* kMosaicFile = "fuzz.mlir";

// The limits of the run target: small, so that no input can make one run take
// seconds or gigabytes (the fuzzer's -timeout and -rss_limit_mb report that).
constexpr int64_t kMaxSteps = 100'000;
constexpr int64_t kMaxWork = 20'000'000;  // under ASan, about a second
constexpr int64_t kMaxMemory = int64_t{64} << 20;
// The prover's: a low Z3 resource limit (the zoo's queries need under 10,000)
// and a wall-clock backstop well under the fuzzer's -timeout.
constexpr unsigned kProveRlimit = 100'000;
constexpr unsigned kProveTimeoutMs = 2000;

// Whether `loc` points into `text` (a line that exists).
bool located_in(const Loc& loc, std::string_view text) {
  int64_t lines = std::count(text.begin(), text.end(), '\n') + 1;
  return loc.known() && loc.line <= lines;
}

std::string exception_name(const std::exception& e) { return typeid(e).name(); }

// Runs one stage. `succeeded` says whether it returned; `bug` is "" unless it
// broke the contract: an exception other than tessera::Error, or (when the
// stage reads `source`) an Error that does not point into the source.
struct Outcome {
  bool succeeded = false;
  std::string bug;
};
Outcome run_stage(const std::string& stage, const std::function<void()>& f,
                  std::optional<std::string_view> source = std::nullopt) {
  try {
    f();
    return {true, ""};
  } catch (const Error& e) {
    if (source && !located_in(e.loc(), *source))
      return {false, stage + ": an error without a location in the input: " + e.formatted()};
    return {false, ""};
  } catch (const std::exception& e) {
    return {false, stage + ": threw " + exception_name(e) + " (" + e.what() + ") instead of tessera::Error"};
  } catch (...) {
    return {false, stage + ": threw something that is not a std::exception"};
  }
}

// The input parsed, if it verifies. Parse and verifier errors must point into
// the input; a broken rule is left in `bug`.
std::optional<Module> verified_module(std::string_view text, std::string& bug) {
  Module m;
  Outcome parsed = run_stage("parse", [&] { m = parse_module(text, kInputFile); }, text);
  bug = parsed.bug;
  if (!parsed.succeeded) return std::nullopt;
  std::vector<Diagnostic> diags;
  Outcome verified = run_stage("verify", [&] { diags = verify_module(m); }, text);
  bug = verified.bug;
  if (!verified.succeeded) return std::nullopt;
  for (const Diagnostic& d : diags)
    if (!located_in(d.loc, text)) {
      bug = "verify: a diagnostic without a location in the input: " + d.str();
      return std::nullopt;
    }
  if (!diags.empty()) return std::nullopt;
  return m;
}

// "" when `m` verifies, prints, parses back, verifies again and prints the
// same text; else which of these failed. `what` names the module.
std::string reprint_bug(const Module& m, const std::string& what) {
  std::string printed;
  try {
    std::vector<Diagnostic> diags = verify_module(m);
    if (!diags.empty()) return what + " does not verify: " + diags.front().str();
    printed = print_module(m);
    Module back = parse_module(printed, "printed.tsr");
    diags = verify_module(back);
    if (!diags.empty()) return what + ", printed and parsed back, does not verify: " + diags.front().str() + "\n" + printed;
    std::string again = print_module(back);
    if (again != printed) return what + " prints differently once parsed back:\n" + printed + "\n---- then:\n" + again;
    return "";
  } catch (const Error& e) {
    return what + ": printing it, parsing the text back or verifying that failed: " + e.formatted() + "\n" + printed;
  } catch (const std::exception& e) {
    return what + ": printing or parsing back threw " + exception_name(e) + " (" + e.what() + ")";
  }
}

// What the pass target runs on each module: every pass alone, then the chain
// the README's demo runs.
const std::vector<std::string>& pipelines() {
  static const std::vector<std::string> all = {
      "jvp", "vmap{axis_size=2}", "discharge", "dce", "linearize", "partial_eval{known=0}", "vjp",
      "jvp,vmap{axis_size=2},discharge,dce"};
  return all;
}

}  // namespace

std::string check_parse(std::string_view text) {
  std::string bug;
  std::optional<Module> m = verified_module(text, bug);
  if (!m) return bug;
  return reprint_bug(*m, "the input module");
}

std::string check_import(std::string_view text) {
  Module m;
  Outcome imported = run_stage("import mosaic", [&] { m = import_mosaic(text, kMosaicFile); }, text);
  if (!imported.succeeded) return imported.bug;
  return reprint_bug(m, "the imported module");
}

std::string check_passes(std::string_view text) {
  std::string bug;
  std::optional<Module> m = verified_module(text, bug);
  if (!m) return bug;
  for (const std::string& pipeline : pipelines()) {
    Module out;
    Outcome o = run_stage(pipeline, [&] { out = run_pipeline(*m, pipeline); });
    if (!o.bug.empty()) return o.bug;
    if (!o.succeeded) continue;  // the pass does not apply (a clear Error)
    if (std::string b = reprint_bug(out, "the result of " + pipeline); !b.empty()) return b;
  }
  return "";
}

std::string check_run(std::string_view text) {
  std::string bug;
  std::optional<Module> m = verified_module(text, bug);
  if (!m) return bug;
  BodyPtr f = m->find("main");
  if (!f || f->kind() != BodyKind::func) return "";
  for (const Var* p : f->params())
    if (p->type.is_ref()) return "";  // random inputs are arrays
  // The simulator's options vary with the input (deterministically, as
  // libFuzzer needs), so that every mode is fuzzed.
  size_t h = std::hash<std::string_view>{}(text);
  interp::RunOptions ro;
  ro.max_steps = kMaxSteps;
  ro.max_work = kMaxWork;
  ro.max_memory = kMaxMemory;
  ro.cores = h & 1 ? 2 : 1;
  ro.dma = h & 2 ? interp::RunOptions::Dma::eager : interp::RunOptions::Dma::on_wait;
  ro.detect_races = (h & 4) != 0;
  ro.oob = h & 8 ? interp::RunOptions::Oob::raise : interp::RunOptions::Oob::uninitialized;
  if (h & 16) ro.grid_seed = h >> 5;
  return run_stage("run", [&] {
           // The inputs count against the memory limit too.
           interp::MemoryLimitScope limit(kMaxMemory);
           std::vector<interp::Array> inputs;
           for (size_t i = 0; i < f->params().size(); ++i)
             inputs.push_back(interp::random_array(f->params()[i]->type.array_type(), 1000003 + i));
           interp::run_function(*m, "main", inputs, ro);
         }).bug;
}

std::string check_prove(std::string_view text) {
  std::string bug;
  std::optional<Module> m = verified_module(text, bug);
  if (!m) return bug;
  prove::Options opts;
  opts.rlimit = kProveRlimit;
  opts.timeout_ms = kProveTimeoutMs;
  return run_stage("prove", [&] {
           opts.assumptions = prove::assumptions_in_source(text);
           std::vector<prove::Obligation> obs = prove::prove_module(*m, opts);
           // What the CLI prints of them, which must not fail either.
           for (const prove::Obligation& o : obs) (void)o.line();
           (void)prove::to_json(obs);
         }).bug;
}

const std::vector<Target>& targets() {
  static const std::vector<Target> all = {
      {"parse", check_parse}, {"passes", check_passes}, {"run", check_run}, {"prove", check_prove},
      {"import", check_import}};
  return all;
}

const Target& target(std::string_view name) {
  for (const Target& t : targets())
    if (name == t.name) return t;
  throw std::invalid_argument("no fuzz target " + std::string(name));
}

}  // namespace tessera::fuzz
