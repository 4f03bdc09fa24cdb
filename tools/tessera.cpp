// tessera: the command-line driver, in the spirit of mlir-opt.
#include <fstream>
#include <iostream>
#include <new>
#include <string>

#include "backends/backend.h"
#include "interpreter/inputs.h"
#include "tools/commands.h"
#include "verify/verify.h"
#include "ir/parser.h"

namespace tessera::cli {

const std::vector<Command>& commands() {
  static const std::string emit_summary = "lower a function for a backend: " + backends::target_names();
  static const std::vector<Command> cmds = {
      {"print", "parse a module and print it in canonical form", cmd_print},
      {"verify", "check modules are well formed", cmd_verify},
      {"graph", "Graphviz dot of a function's def-use graph", cmd_graph},
      {"run", "run a function in the reference interpreter", cmd_run},
      {"prove", "prove block and kernel bounds, non-revisiting, parallel safety, carried state, semaphore protocols, races and output coverage with Z3", cmd_prove},
      {"cost", "flops, transcendentals and bytes moved per pallas_call, computed", cmd_cost},
      {"opt", "run a pipeline of transformations", cmd_opt},
      {"emit", emit_summary.c_str(), cmd_emit},
      {"import", "read a kernel written elsewhere (mosaic: JAX Pallas's TPU text) as a tessera module", cmd_import},
      {"rules", "a primitive's schema and every consumer's rule (file:line) or the reason it has none", cmd_rules},
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

std::map<std::string, std::string> named_inputs(const std::vector<std::string>& flags) {
  std::map<std::string, std::string> given;
  for (const std::string& spec : flags) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0) throw Error("--input needs NAME=PATH.npy, got '" + spec + "'");
    std::string name = spec.substr(0, eq);
    if (!name.empty() && name[0] == '%') name = name.substr(1);
    given[name] = spec.substr(eq + 1);
  }
  return given;
}

interp::Array random_input(const Var& param, size_t i, uint64_t seed) {
  try {
    return interp::random_array(param.type.array_type(), seed * 1000003 + i);
  } catch (const Error& e) {
    throw Error(param.loc, "the random input for parameter %" + param.name + ": " + e.message());
  }
}

int write_output(const std::string& path, const std::string& text) {
  if (path.empty()) {
    std::cout << text;
    return 0;
  }
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out.flush()) {
    std::cerr << "error: cannot write " << path << "\n";
    return 1;
  }
  return 0;
}

BodyPtr find_function(const Module& m, const std::string& name) {
  if (BodyPtr b = m.find(name)) return b;
  std::string names;
  for (const BodyPtr& s : m.symbols()) names += (names.empty() ? "" : ", ") + ("@" + s->name());
  std::cerr << "error: no function @" << name << " in module"
            << (names.empty() ? " (the module is empty)" : " (it has " + names + "); pick one with --func") << "\n";
  return nullptr;
}

}  // namespace tessera::cli

namespace {

void print_help(std::ostream& os) {
  os << "usage: tessera COMMAND [options] FILE...\n\n"
        "tessera is a compiler research framework for blocked (Pallas-style) kernels.\n"
        "FILE may be '-' for stdin. Output goes to stdout, errors to stderr as\n"
        "`file:line:col: error: message`; the exit status is 0 on success, 1 on any error.\n"
        "The entry function of a module is @main unless --func names another.\n"
        "Run 'tessera COMMAND --help' (or 'tessera help COMMAND') for a command's options.\n\ncommands:\n";
  for (const auto& c : tessera::cli::commands()) {
    std::string name = c.name;
    os << "  " << name << std::string(name.size() < 10 ? 10 - name.size() : 1, ' ') << c.summary << "\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    print_help(std::cerr);
    return 1;
  }
  std::string name = argv[1];
  if (name == "--help" || name == "-h") {
    print_help(std::cout);
    return 0;
  }
  tessera::cli::Argv rest(argv + 2, argv + argc);
  if (name == "help") {  // `tessera help CMD` is `tessera CMD --help`
    if (rest.empty()) {
      print_help(std::cout);
      return 0;
    }
    name = rest[0];
    rest = {"--help"};
  }
  for (const auto& c : tessera::cli::commands()) {
    if (name != c.name) continue;
    try {
      return c.run(rest);
    } catch (const tessera::Error& e) {
      std::cerr << e.formatted() << "\n";
      return 1;
    } catch (const std::bad_alloc&) {
      std::cerr << "error: out of memory\n";
      return 1;
    } catch (const std::exception& e) {
      std::cerr << "error: internal error: " << e.what() << "\n";
      return 1;
    }
  }
  std::cerr << "error: unknown command '" << name << "' (see tessera --help)\n";
  return 1;
}
