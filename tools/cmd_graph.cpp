// `tessera graph FILE [--func NAME]`: Graphviz dot of a body's def-use graph
// (analysis/graph.h), for looking at a kernel's dataflow and effect order.
// `tessera graph FILE --blocks [--call N] [-o map.svg]`: an SVG of one
// pallas_call's block map (interpreter/block_map.h, tools/block_map_svg.h).
//
//   tessera graph examples/add.tsr | dot -Tsvg > add.svg
//   tessera graph examples/matmul.tsr --blocks -o matmul.svg
#include <iostream>

#include "analysis/graph.h"
#include "analysis/prove/prove.h"
#include "interpreter/block_map.h"
#include "runtime/region.h"
#include "tools/args.h"
#include "tools/block_map_svg.h"
#include "tools/block_pictures.h"
#include "tools/commands.h"

namespace tessera::cli {
namespace {

// `--blocks`: the SVG of the N-th pallas_call of `body`.
int draw_blocks(const Module& m, const Body& body, const Args& a) {
  std::vector<const Op*> calls = interp::pallas_calls(body);
  int64_t n = 0;
  try {
    size_t used = 0;
    n = std::stoll(a.get("--call"), &used);
    if (used != a.get("--call").size() || n < 0) throw std::invalid_argument("");
  } catch (const std::exception&) {
    std::cerr << "error: --call needs a non-negative integer, got '" << a.get("--call") << "'\n";
    return 1;
  }
  if (n >= static_cast<int64_t>(calls.size())) {
    std::cerr << "error: @" << body.name() << " has " << calls.size() << " pallas_call(s); --call " << n
              << " names none (they count from 0)\n";
    return 1;
  }
  const Op& call = *calls[static_cast<size_t>(n)];
  std::string name = prove::call_name(call);
  interp::BlockMap bm = interp::block_map(m, call, name, prefetch_values(call, name, named_inputs(a.all("--input"))));
  for (const interp::OperandBlocks& ob : bm.operands)
    if (!ob.failures.empty())
      std::cerr << "warning: the index map of " << ob.subject << " fails at " << ob.failures.size()
                << " grid point(s), first at " << interp::ints_str(bm.point(ob.failures.front().first)) << ": "
                << ob.failures.front().second << "\n";
  return write_output(a.get("-o"), block_map_svg(bm));
}

}  // namespace

int cmd_graph(const Argv& argv) {
  Args a("graph",
         "Prints the def-use graph of one function, kernel or index map as Graphviz dot: a box per parameter,\n"
         "an ellipse per op, solid edges from each value's definition to its uses (labelled with the value),\n"
         "and dashed edges between ops whose order matters: both touch the same Ref and one of them writes it,\n"
         "or both have ordered io / comms effects. Nested bodies count as the op holding them.\n"
         "Render with e.g. `tessera graph FILE | dot -Tsvg > out.svg`.\n"
         "With --blocks, draws instead the block map of a pallas_call of the function as SVG: each input and\n"
         "output cut into blocks, each block coloured by the grid points that touch it, revisits, padding and\n"
         "out-of-bounds blocks marked, with the grid order (docs/pictures.md). Grids of up to 4096 points.",
         "FILE");
  a.flag("--func", "NAME", "the function, kernel or index map to draw", "main");
  a.toggle("--no-effects", "leave out the effect-order edges");
  a.toggle("--no-return", "leave out the `return` node");
  a.toggle("--no-verify", "draw even if the verifier finds problems");
  a.toggle("--levels", "instead of dot, list the ops by level (an as-soon-as-possible schedule): ops of one\n"
                       "level depend on no other op of that level");
  a.toggle("--blocks", "draw the block map of a pallas_call of the function as SVG instead");
  a.flag("--call", "N", "with --blocks: the N-th pallas_call of the function, in program order", "0");
  a.repeated("--input", "NAME=PATH.npy", "with --blocks: the values of a scalar-prefetch operand its index maps read");
  a.flag("-o", "FILE", "with --blocks: write the SVG to FILE instead of stdout");
  if (!a.parse(argv)) return a.exit_code();
  if (a.positionals().size() != 1) {
    std::cerr << "error: tessera graph takes one FILE ('-' for stdin)\n";
    return 1;
  }
  auto m = load_module(a.positionals()[0], !a.has("--no-verify"));
  if (!m) return 1;
  BodyPtr body = find_function(*m, a.get("--func"));
  if (!body) return 1;
  if (a.has("--blocks")) {
    try {
      return draw_blocks(*m, *body, a);
    } catch (const Error& e) {
      std::cerr << e.formatted() << "\n";
      return 1;
    }
  }
  for (const char* flag : {"--call", "--input", "-o"})
    if (a.has(flag)) {
      std::cerr << "error: " << flag << " goes with --blocks\n";
      return 1;
    }
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
