// `tessera graph FILE [--func NAME]`: Graphviz dot of a body's def-use graph
// (analysis/graph.h), for looking at a kernel's dataflow and effect order.
//
//   tessera graph examples/add.tsr | dot -Tsvg > add.svg
#include <iostream>

#include "analysis/graph.h"
#include "tools/args.h"
#include "tools/commands.h"

namespace tessera::cli {

int cmd_graph(const Argv& argv) {
  Args a("graph",
         "Prints the def-use graph of one function, kernel or index map as Graphviz dot: a box per parameter,\n"
         "an ellipse per op, solid edges from each value's definition to its uses (labelled with the value),\n"
         "and dashed edges between ops whose order matters: both touch the same Ref and one of them writes it,\n"
         "or both have ordered io / comms effects. Nested bodies count as the op holding them.\n"
         "Render with e.g. `tessera graph FILE | dot -Tsvg > out.svg`.",
         "FILE");
  a.flag("--func", "NAME", "the function, kernel or index map to draw", "main");
  a.toggle("--no-effects", "leave out the effect-order edges");
  a.toggle("--no-return", "leave out the `return` node");
  a.toggle("--no-verify", "draw even if the verifier finds problems");
  a.toggle("--levels", "instead of dot, list the ops by level (an as-soon-as-possible schedule): ops of one\n"
                       "level depend on no other op of that level");
  if (!a.parse(argv)) return a.exit_code();
  if (a.positionals().size() != 1) {
    std::cerr << "error: tessera graph takes one FILE ('-' for stdin)\n";
    return 1;
  }
  auto m = load_module(a.positionals()[0], !a.has("--no-verify"));
  if (!m) return 1;
  BodyPtr body = find_function(*m, a.get("--func"));
  if (!body) return 1;
  graph::GraphOptions opts;
  opts.effect_edges = !a.has("--no-effects");
  opts.return_node = !a.has("--no-return");
  graph::DefUseGraph g = graph::def_use_graph(*body, opts);
  if (a.has("--levels")) {
    std::vector<int> level = graph::depths(g);
    for (graph::Vertex v : graph::schedule_by_level(g)) std::cout << "level " << level[v] << "  " << g[v].label << "\n";
    return 0;
  }
  graph::write_dot(std::cout, g, "@" + body->name());
  return 0;
}

}  // namespace tessera::cli
