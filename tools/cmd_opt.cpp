// `tessera opt FILE --passes=PIPELINE`: runs a pipeline of transformations and
// prints the resulting module.
#include <iostream>

#include "ir/printer.h"
#include "tools/args.h"
#include "tools/commands.h"
#include "transforms/pass.h"
#include "transforms/transpose_grid.h"

namespace tessera::cli {

int cmd_opt(const Argv& argv) {
  Args a("opt", "Runs a pipeline of transformations and prints the resulting module.\n\npasses and their options:\n" + describe_passes(), "FILE");
  a.flag("--passes", "PIPELINE", "comma-separated passes with options, e.g. vmap{axis_size=3,in_axes=0|none},jvp,dce");
  a.flag("--func", "NAME", "the function the passes transform: the option func= of every step that does not set it (default main)");
  a.toggle("--print-after-all", "print the module after each pass (to stderr)");
  a.toggle("--verify-each", "run the verifier after each pass; an ill-formed result names the pass");
  a.toggle("--list-passes", "list the passes and exit");
  a.toggle("--verbose", "print the passes' notes to stderr (why a transposed kernel sums partial cotangents)");
  if (!a.parse(argv)) return a.exit_code();
  if (a.has("--list-passes")) {
    std::cout << describe_passes();
    return 0;
  }
  if (a.positionals().size() != 1) {
    std::cerr << "error: tessera opt takes one FILE\n";
    return 1;
  }
  if (!a.has("--passes")) {
    std::cerr << "error: tessera opt needs --passes=PIPELINE (see --list-passes)\n";
    return 1;
  }
  auto m = load_module(a.positionals()[0], true);
  if (!m) return 1;
  PipelineOptions opts;
  opts.print_after_all = a.has("--print-after-all");
  opts.verify_each = a.has("--verify-each");
  opts.log = &std::cerr;
  if (a.has("--func")) opts.entry = a.get("--func");
  if (a.has("--verbose")) transpose::set_pallas_call_note_sink([](const std::string& note) { std::cerr << note << "\n"; });
  try {
    Module out = run_pipeline(*m, a.get("--passes"), opts);
    std::cout << print_module(out);
  } catch (const Error& e) {
    std::cerr << e.formatted() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace tessera::cli
