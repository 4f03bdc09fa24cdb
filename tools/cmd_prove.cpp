// `tessera prove FILE`: formal checks of every pallas_call (docs/prove.md).
#include <fstream>
#include <iostream>
#include <sstream>

#include "analysis/prove/prove.h"
#include "tools/args.h"
#include "tools/commands.h"

namespace tessera::cli {

namespace {

// The module's source text, for `# prove: assume ...` lines ("" for stdin).
std::string source_text(const std::string& path) {
  if (path == "-") return "";
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

int cmd_prove(const Argv& argv) {
  Args a("prove",
         "Proves, for every pallas_call, that block indices stay in bounds, output blocks are never revisited in any\n"
         "grid order the interpreter may use, parallel grid axes never write the same output block, and kernel Ref\n"
         "accesses stay in bounds. One line per obligation: proved, FAILED (with a counterexample) or unknown (with\n"
         "the reason). Exit 0: all proved; 1: some failed; 3: none failed, some unknown.\n"
         "Ranges may also be declared in the file, as comment lines `# prove: assume NAME in [lo, hi)`.",
         "FILE");
  a.flag("--func", "NAME", "only the pallas_calls reachable from function NAME (default: every function)");
  a.flag("--timeout-ms", "N", "wall-clock backstop per Z3 query", std::to_string(prove::Options{}.timeout_ms));
  a.flag("--rlimit", "N", "Z3 deterministic resource limit per query (0 = none)", std::to_string(prove::Options{}.rlimit));
  a.repeated("--assume", "'NAME in [lo, hi)'", "range of a scalar prefetch operand or dynamic grid size, by name");
  a.toggle("--json", "print the verdicts as JSON");
  a.flag("--smt2", "DIR", "write every Z3 query as an SMT-LIB2 file into DIR");
  a.toggle("--no-intervals", "ask Z3 even where interval bounds settle an obligation");
  if (!a.parse(argv)) return a.exit_code();
  if (a.positionals().size() != 1) {
    std::cerr << "error: tessera prove takes one FILE\n";
    return 1;
  }
  const std::string& path = a.positionals()[0];
  prove::Options opts;
  try {
    opts.func = a.get("--func");
    opts.timeout_ms = static_cast<unsigned>(std::stoul(a.get("--timeout-ms")));
    opts.rlimit = static_cast<unsigned>(std::stoul(a.get("--rlimit")));
  } catch (const std::exception&) {
    std::cerr << "error: --timeout-ms and --rlimit take non-negative integers\n";
    return 1;
  }
  opts.smt2_dir = a.get("--smt2");
  opts.use_intervals = !a.has("--no-intervals");
  auto m = load_module(path);
  if (!m) return 1;
  opts.assumptions = prove::assumptions_in_source(source_text(path));
  for (const std::string& s : a.all("--assume")) opts.assumptions.push_back(prove::parse_assumption(s));
  std::vector<prove::Obligation> obs = prove::prove_module(*m, opts);
  if (a.has("--json")) {
    std::cout << prove::to_json(obs);
  } else {
    for (const prove::Obligation& o : obs) std::cout << o.line() << "\n";
    if (obs.empty()) std::cout << "no pallas_call or core_map to prove\n";
  }
  return prove::exit_code(obs);
}

}  // namespace tessera::cli
