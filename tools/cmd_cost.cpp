// `tessera cost FILE [--func NAME] [--json]`: the flops, transcendentals and
// bytes moved between HBM and VMEM of every pallas_call and core_map a
// function runs, computed without running it (analysis/cost/cost.h), and a
// warning where a pallas_call's own cost_estimate is far off.
#include <algorithm>
#include <iostream>
#include <optional>

#include "analysis/cost/cost.h"
#include "analysis/prove/prove.h"
#include "interpreter/inputs.h"
#include "interpreter/interpreter.h"
#include "ir/grid_mapping.h"
#include "runtime/npy.h"
#include "tools/args.h"
#include "tools/block_pictures.h"
#include "tools/commands.h"

namespace tessera::cli {
namespace {

// The scalar-prefetch values of `call`: from --input files, or, for a
// parameter of `f` with --random-inputs, the random values `tessera run
// --random-inputs` would give it.
std::vector<interp::Array> prefetch_for(const Op& call, const Body& f, const std::map<std::string, std::string>& given,
                                        const std::optional<uint64_t>& seed) {
  GridMapping g = grid_mapping(call);
  std::vector<interp::Array> out;
  bool all_random = seed.has_value();
  for (int j = 0; j < g.num_scalar_prefetch() && all_random; ++j) {
    const Value& v = call.operands.at(g.scalar_prefetch_operand(j));
    const auto& params = f.params();
    auto it = v.is_var() ? std::find(params.begin(), params.end(), v.var()) : params.end();
    if (it == params.end() || given.count((*it)->name)) {
      all_random = false;
      break;
    }
    out.push_back(random_input(**it, static_cast<size_t>(it - params.begin()), *seed));
  }
  if (all_random) return out;
  return prefetch_values(call, prove::call_name(call), given);
}

}  // namespace

int cmd_cost(const Argv& argv) {
  Args a("cost",
         "Computes, without running it, what function NAME (default main) of FILE does per pallas_call and\n"
         "core_map and in total: flops (a multiply-add counts 2, dot_general 2*M*N*K), transcendentals (exp,\n"
         "log, tanh, sin, ...), bytes moved between HBM and VMEM by block copies (a block is copied only when\n"
         "its place changes between consecutive grid points, as the pipeline does) and by DMAs, and the\n"
         "arithmetic intensity (flops per byte): Pallas's CostEstimate, computed. Kernels count once per grid\n"
         "point and loops once per trip; a cond on a value known only at run time counts its most costly\n"
         "branch (an upper bound, noted). A pallas_call's cost_estimate more than a factor of 2 off the computed\n"
         "figures is a warning on stderr. `tessera run --stats` counts the same figures as it runs (on one core).",
         "FILE");
  a.flag("--func", "NAME", "the function", "main");
  a.toggle("--json", "print the figures as JSON");
  a.repeated("--input", "NAME=PATH.npy", "the values of a scalar-prefetch operand the index maps read");
  a.flag("--random-inputs", "SEED", "scalar-prefetch parameters get the random values `run --random-inputs SEED` gives");
  if (!a.parse(argv)) return a.exit_code();
  if (a.positionals().size() != 1) {
    std::cerr << "error: tessera cost takes exactly one FILE ('-' for stdin)\n";
    return 1;
  }
  auto m = load_module(a.positionals()[0]);
  if (!m) return 1;
  BodyPtr f = find_function(*m, a.get("--func"));
  if (!f) return 1;
  try {
    std::map<std::string, std::string> given = named_inputs(a.all("--input"));
    std::optional<uint64_t> seed;
    if (a.has("--random-inputs")) {
      try {
        seed = static_cast<uint64_t>(std::stoll(a.get("--random-inputs")));
      } catch (const std::exception&) {
        throw Error("--random-inputs needs an integer, got '" + a.get("--random-inputs") + "'");
      }
    }
    cost::CostOptions opts;
    opts.prefetch = [&](const Op& call) { return prefetch_for(call, *f, given, seed); };
    opts.index_maps = interp::index_map_function;
    cost::CostReport r = cost::compute_cost(*m, *f, opts);
    for (const cost::EstimateMismatch& w : cost::check_estimates(r))
      std::cerr << w.op->loc.str() << ": warning: " << w.message << "\n";
    std::cout << (a.has("--json") ? cost::json_report(r) : cost::format_report(r));
    return 0;
  } catch (const Error& e) {
    std::cerr << e.formatted() << "\n";
    return 1;
  }
}

}  // namespace tessera::cli
