#include <iostream>

#include "ir/printer.h"
#include "tools/args.h"
#include "tools/commands.h"

namespace tessera::cli {

int cmd_print(const Argv& argv) {
  Args a("print", "Parses a module and prints it in canonical form (print(parse(print(m))) == print(m)).", "FILE");
  a.toggle("--no-verify", "print even if the verifier finds problems");
  if (!a.parse(argv)) return a.exit_code();
  if (a.positionals().size() != 1) {
    std::cerr << "error: tessera print takes one FILE\n";
    return 1;
  }
  auto m = load_module(a.positionals()[0], !a.has("--no-verify"));
  if (!m) return 1;
  std::cout << print_module(*m);
  return 0;
}

}  // namespace tessera::cli
