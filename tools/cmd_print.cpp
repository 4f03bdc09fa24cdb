// `tessera print FILE`: the canonical text of a module.
#include <iostream>

#include "ir/printer.h"
#include "tools/args.h"
#include "tools/commands.h"

namespace tessera::cli {

int cmd_print(const Argv& argv) {
  Args a("print",
         "Parses a module, runs the verifier, and prints it in canonical form: every result annotated with its\n"
         "type, every literal with its dtype, default parameters left out, a `// effects:` comment over each\n"
         "top-level body with effects. Printing the output again gives the same text.",
         "FILE");
  a.flag("--func", "NAME", "print only this function, kernel or index map");
  a.toggle("--no-verify", "print even if the verifier finds problems");
  if (!a.parse(argv)) return a.exit_code();
  if (a.positionals().size() != 1) {
    std::cerr << "error: tessera print takes one FILE ('-' for stdin)\n";
    return 1;
  }
  auto m = load_module(a.positionals()[0], !a.has("--no-verify"));
  if (!m) return 1;
  if (a.has("--func")) {
    BodyPtr b = m->find(a.get("--func"));
    if (!b) {
      std::cerr << "error: no function @" << a.get("--func") << " in module\n";
      return 1;
    }
    std::cout << print_body(*b, &*m);
    return 0;
  }
  std::cout << print_module(*m);
  return 0;
}

}  // namespace tessera::cli
