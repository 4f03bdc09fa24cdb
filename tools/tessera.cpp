// tessera: the command-line driver, in the spirit of mlir-opt.
#include <iostream>
#include <string>

#include "tools/commands.h"
#include "verify/verify.h"
#include "ir/parser.h"

namespace tessera::cli {

const std::vector<Command>& commands() {
  static const std::vector<Command> cmds = {
      {"print", "parse a module and print it in canonical form", cmd_print},
      {"verify", "check modules are well formed", cmd_verify},
      {"graph", "Graphviz dot of a function's def-use graph", cmd_graph},
      {"run", "run a function in the reference interpreter", cmd_run},
      {"prove", "prove bounds, non-revisiting and parallel safety with Z3", cmd_prove},
      {"opt", "run a pipeline of transformations", cmd_opt},
  };
  return cmds;
}

std::optional<Module> load_module(const std::string& path, bool verify) {
  try {
    Module m = parse_file(path);
    if (verify) {
      std::vector<Diagnostic> diags = verify_module(m);
      for (const Diagnostic& d : diags) std::cerr << d.str() << "\n";
      if (!diags.empty()) return std::nullopt;
    }
    return m;
  } catch (const Error& e) {
    std::cerr << e.formatted() << "\n";
    return std::nullopt;
  }
}

}  // namespace tessera::cli

namespace {

void print_help() {
  std::cout << "usage: tessera COMMAND [options] FILE...\n\n"
               "tessera is a compiler research framework for blocked (Pallas-style) kernels.\n"
               "FILE may be '-' for stdin. Run 'tessera COMMAND --help' for a command's options.\n\ncommands:\n";
  for (const auto& c : tessera::cli::commands()) {
    std::string name = c.name;
    std::cout << "  " << name << std::string(10 - name.size(), ' ') << c.summary << "\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    print_help();
    return argc < 2 ? 1 : 0;
  }
  std::string name = argv[1];
  tessera::cli::Argv rest(argv + 2, argv + argc);
  for (const auto& c : tessera::cli::commands()) {
    if (name != c.name) continue;
    try {
      return c.run(rest);
    } catch (const tessera::Error& e) {
      std::cerr << e.formatted() << "\n";
      return 1;
    } catch (const std::exception& e) {
      std::cerr << "error: internal error: " << e.what() << "\n";
      return 1;
    }
  }
  std::cerr << "error: unknown command '" << name << "' (see tessera --help)\n";
  return 1;
}
