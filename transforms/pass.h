// Passes: functions Module -> Module. A pass never mutates its input; it
// builds new bodies and shares the ones it leaves alone.
//
// Each pass is driven by a per-primitive RuleTable (ir/primitive.h); a missing
// rule is the Error "no <pass> rule for primitive <name>".
#pragma once

#include <map>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "ir/ir.h"

namespace tessera {

// Options from a pipeline string: `vmap{axis_size=3,in_axes=0|none}`.
struct PassOptions {
  std::map<std::string, std::string, std::less<>> values;
  bool has(std::string_view key) const { return values.count(key) > 0; }
  std::string get(std::string_view key, std::string fallback = "") const;
  int64_t get_int(std::string_view key, int64_t fallback) const;  // throws Error if not an integer
};

using PassFn = Module (*)(const Module&, const PassOptions&);

// One option a pass accepts, declared with the pass (as an MLIR pass declares
// its Option<>s). The pipeline parser rejects options a pass does not declare
// and values of the wrong type, naming the column; the pass itself interprets
// list values (it knows how many inputs there are).
enum class OptionType {
  Int,     // a decimal integer
  Choice,  // one of the words in `choices` ("lower|keep")
  List,    // positions or words separated by '|' ("0|2", "0|none|1")
  Symbol,  // a function name
};

struct PassOptionInfo {
  const char* name;
  OptionType type;
  const char* default_value;  // as the help shows it; "" when the option is required
  const char* help;
  const char* choices = "";   // Choice: the allowed words, '|'-separated
};

struct PassInfo {
  const char* name;
  const char* summary;
  PassFn run;
  std::vector<PassOptionInfo> options;
  const PassOptionInfo* option(std::string_view name) const;
};

// "int", "lower|keep", "I|J|...", "NAME": how the help writes an option's values.
std::string option_type_str(const PassOptionInfo& o);
// Every pass with its options, for `tessera opt --help` and --list-passes.
std::string describe_passes();

// Every pass, by name (transforms/pass_manager.cpp).
const std::vector<PassInfo>& all_passes();

// Adds a pass defined outside tessera (an embedding program,
// docs/embedding.md) to the ones pipelines name. Call it at start-up, before
// running pipelines and from one thread (it may move the PassInfos that
// find_pass points at). The strings must outlive the program (literals).
// Throws Error on a duplicate or ill-formed name, or a missing `run`.
void register_pass(PassInfo pass);

struct PipelineOptions {
  bool print_after_all = false;  // print the module after each pass to `log`
  bool verify_each = false;      // run the verifier after each pass
  std::ostream* log = nullptr;
  // Entry function the passes transform (`--func`); given to every step as the
  // option `func=` unless the step names one itself. Empty: each pass's default (main).
  std::string entry;
};

// One parsed step of a pipeline: a pass name and its options.
struct PipelineStep {
  std::string name;
  PassOptions options;
};

// Parses a pipeline string; throws Error naming the column on bad syntax and
// listing the known passes on an unknown one.
std::vector<PipelineStep> parse_pipeline(std::string_view text);
// The pass named `name`, or null.
const PassInfo* find_pass(std::string_view name);

// Parses and runs `dce,jvp{wrt=0},vmap{axis_size=3}`. Throws Error on a bad
// pipeline, an unknown pass, a failing rule or (with verify_each) a verifier
// failure naming the pass that produced the ill-formed IR.
Module run_pipeline(const Module& m, std::string_view pipeline, const PipelineOptions& opts = {});

// The passes (one file each in transforms/).
Module dce_pass(const Module& m, const PassOptions& o);           // dce.cpp
Module discharge_pass(const Module& m, const PassOptions& o);     // discharge.cpp
Module jvp_pass(const Module& m, const PassOptions& o);           // jvp.cpp
Module vmap_pass(const Module& m, const PassOptions& o);          // vmap.cpp
Module partial_eval_pass(const Module& m, const PassOptions& o);  // partial_eval.cpp
Module linearize_pass(const Module& m, const PassOptions& o);     // partial_eval.cpp
Module transpose_pass(const Module& m, const PassOptions& o);     // vjp.cpp
Module vjp_pass(const Module& m, const PassOptions& o);           // vjp.cpp

// Building blocks the passes share.
// The function named by the option `func` (default main); an Error naming the
// pass when there is none or the symbol is a kernel or index map.
BodyPtr entry_function(const Module& m, const PassOptions& o, std::string_view pass);
// `b` with dead ops removed (the same pointer when nothing is dead).
BodyPtr dce_body(const BodyPtr& b);

}  // namespace tessera
